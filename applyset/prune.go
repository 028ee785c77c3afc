package applyset

import (
	"context"
	"errors"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// prune deletes the members that are no longer wanted. It returns the
// group-kinds the parent must keep listing besides the wanted ones (those it
// could not prove empty of members), and whether everything that had to go
// went. A group-kind is dropped only when it is proven not served.
func (r *run) prune(ctx context.Context, members []*member, gks sets.Set[schema.GroupKind], namespaces sets.Set[string]) (keep sets.Set[schema.GroupKind], ok bool) {
	keep = sets.New[schema.GroupKind]()
	ok = true
	wanted := sets.New[ObjectID]()
	// What the members and the parent need: deleting their Namespace or the
	// CRD of their kind would delete them too.
	neededNS, neededGKs := sets.New[string](), sets.New[schema.GroupKind]()
	if r.s.namespaced {
		neededNS.Insert(r.s.parent.GetNamespace())
	}
	neededGKs.Insert(r.s.parent.GroupVersionKind().GroupKind())
	for _, m := range members {
		wanted.Insert(m.id)
		neededGKs.Insert(m.id.GroupKind)
		if m.id.Namespace != "" {
			neededNS.Insert(m.id.Namespace)
		}
	}
	fail := func(gk schema.GroupKind, ns string, err error) {
		keep.Insert(gk)
		r.res.Objects = append(r.res.Objects, ObjectResult{ID: ObjectID{GroupKind: gk, Namespace: ns},
			Object: gk.String() + " in " + nsName(ns), Action: Failed, Err: err})
		ok = false
	}
	var doomed []*unstructured.Unstructured
	for _, g := range kindStrings(gks) {
		gk := schema.ParseGroupKind(g)
		mapping, err := r.s.c.RESTMapper().RESTMapping(gk)
		if err != nil {
			if proof := r.notServed(ctx, gk, err); proof != nil {
				r.res.add(ObjectID{GroupKind: gk}, Skipped, proof)
			} else {
				fail(gk, "", fmt.Errorf("cannot list the members, kind kept in the parent: %w", err))
			}
			continue
		}
		for _, ns := range scopes(mapping, namespaces) {
			items, listed := r.listed[listKey{gk, ns}]
			if !listed {
				items, err = r.s.listMembers(ctx, mapping, ns)
			}
			if apierrors.IsNotFound(err) {
				// The server says it does not serve the kind (the mapping was
				// cached but the CRD is gone since).
				r.res.add(ObjectID{GroupKind: gk}, Skipped, fmt.Errorf("kind not served, nothing to prune: %w", err))
				break
			} else if err != nil {
				fail(gk, ns, err)
				continue
			}
			for _, item := range items {
				if !wanted.Has(idOf(item)) {
					doomed = append(doomed, item)
				}
			}
		}
	}
	// Namespaced objects before Namespaces, Namespaces before CRDs.
	sort.SliceStable(doomed, func(i, j int) bool {
		return rank(doomed[i].GroupVersionKind().GroupKind()) > rank(doomed[j].GroupVersionKind().GroupKind())
	})
	for _, d := range doomed {
		id := idOf(d)
		if why := needed(d, neededNS, neededGKs); why != "" {
			// Left a member: pruned once nothing needs it.
			r.res.add(id, Skipped, fmt.Errorf("not pruned: %s", why))
			keep.Insert(id.GroupKind)
			continue
		}
		action, err := r.pruneOne(ctx, d)
		if action == Skipped {
			r.res.add(id, Skipped, err)
			continue
		}
		if err != nil {
			r.res.add(id, Failed, err)
			keep.Insert(id.GroupKind)
			ok = false
			continue
		}
		r.res.add(id, action, nil)
	}
	return keep, ok
}

// pruneOne deletes d, a member as listed at the start of Apply, or
// detaches it when it is annotated to be kept. The delete is locked on the
// UID and resourceVersion listed: an object changed since (relabelled into
// another set, its part-of label removed, annotated to be kept) is read
// again and judged anew, and one that is no longer a member is left alone
// (Skipped); a recreated one of the same name (another UID) is not
// deleted either.
func (r *run) pruneOne(ctx context.Context, d *unstructured.Unstructured) (Action, error) {
	for attempt := 1; ; attempt++ {
		if keepAnnotated(d) {
			before := d.DeepCopy()
			labels := d.GetLabels()
			delete(labels, PartOfLabel)
			d.SetLabels(labels)
			return Detached, r.s.c.Patch(ctx, d, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		}
		// An unstructured object needs no scheme (a client without
		// apiextensions can delete a CRD).
		del := &unstructured.Unstructured{}
		del.SetGroupVersionKind(d.GroupVersionKind())
		del.SetNamespace(d.GetNamespace())
		del.SetName(d.GetName())
		uid, rv := d.GetUID(), d.GetResourceVersion()
		err := r.s.c.Delete(ctx, del, client.Preconditions{UID: &uid, ResourceVersion: &rv}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err == nil || apierrors.IsNotFound(err) {
			return Pruned, nil
		}
		if !apierrors.IsConflict(err) || attempt == 3 {
			return Pruned, err
		}
		// Changed since it was listed: read it again.
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(d.GroupVersionKind())
		if gerr := r.s.c.Get(ctx, client.ObjectKeyFromObject(d), live); apierrors.IsNotFound(gerr) {
			return Pruned, nil
		} else if gerr != nil {
			return Pruned, fmt.Errorf("%w; reading it again: %w", err, gerr)
		}
		switch {
		case live.GetUID() != uid:
			return Pruned, err // another object of the name now: not the member listed
		case live.GetLabels()[PartOfLabel] != r.s.ID():
			return Skipped, fmt.Errorf("not pruned: it left the set since it was listed (its %s label is %q now)", PartOfLabel, live.GetLabels()[PartOfLabel])
		}
		d = live
	}
}

// needed says why d, no longer wanted, must not be deleted: it is a
// Namespace that holds members or the parent, or a CRD that defines their
// kind. "" when nothing needs it.
func needed(d *unstructured.Unstructured, namespaces sets.Set[string], gks sets.Set[schema.GroupKind]) string {
	switch d.GroupVersionKind().GroupKind() {
	case namespaceGK:
		if namespaces.Has(d.GetName()) {
			return "the namespace holds members of the set or its parent"
		}
	case crdGK:
		if gks.Has(crdKind(d)) {
			return "the CRD defines the kind of members of the set or of its parent"
		}
	}
	return ""
}

func nsName(ns string) string {
	if ns == "" {
		return "the cluster"
	}
	return "namespace " + ns
}

// notServed returns why gk, which the REST mapper failed to map with
// mapErr, is proven not served, or nil when it is not proven. Proof is a
// no-match answer of the mapper, and no CRD defining gk (but one whose
// names the API server refused and that was never established, which
// never served it), and no APIService
// of gk's group served by another server (an aggregated API whose discovery
// may have failed for a moment). Any other error (a 503 from discovery,
// RBAC refusing the checks) proves nothing: the kind stays in the parent and
// the prune fails, so its members are not forgotten.
func (r *run) notServed(ctx context.Context, gk schema.GroupKind, mapErr error) error {
	if !meta.IsNoMatchError(mapErr) || discoveryFailed(mapErr) {
		return nil
	}
	crds := &unstructured.UnstructuredList{}
	crds.SetGroupVersionKind(crdGK.WithVersion("v1").GroupVersion().WithKind("CustomResourceDefinitionList"))
	if err := r.s.c.List(ctx, crds); err != nil {
		return nil
	}
	for _, crd := range crds.Items {
		// A CRD whose names the API server refused and that was never
		// established (Established, once True, stays so) never served
		// anything.
		refused := condition(&crd, "NamesAccepted", "False") != "" && !established(&crd)
		if crdKind(&crd) == gk && !refused {
			return nil // defined: not served yet, or discovery lags
		}
	}
	if gk.Group != "" {
		svcs := &unstructured.UnstructuredList{}
		svcs.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIServiceList"})
		if err := r.s.c.List(ctx, svcs); err != nil {
			return nil
		}
		for _, svc := range svcs.Items {
			g, _, _ := unstructured.NestedString(svc.Object, "spec", "group")
			remote, _, _ := unstructured.NestedMap(svc.Object, "spec", "service")
			if g == gk.Group && remote != nil {
				return nil // an aggregated API: its discovery may have failed
			}
		}
	}
	return fmt.Errorf("kind not served (no CRD or aggregated API defines it), nothing to prune: %w", mapErr)
}

// discoveryFailed reports whether err carries a discovery failure other than
// a NotFound, which the mapper may also report as no match.
func discoveryFailed(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) && !apierrors.IsNotFound(err)
}

func keepAnnotated(o client.Object) bool {
	a := o.GetAnnotations()
	return a[onRemoveAnnotation] == "keep" || a[lifecycleDeletion] == "detach"
}

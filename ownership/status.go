package ownership

import (
	"context"
	"errors"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
	"github.com/steadyk8s/steady/internal/scope"
)

// patchStatus writes, to the status subresource (or to the object itself
// for kinds without one), a merge patch of the change from base, the status
// mutate ran on, to want (statuses in map form, nil for none). child is the
// object as the API server last answered (base's object, or newer after a
// patch of ours) and receives the answer. Only the fields mutate changed
// are in the patch, so another writer's changes to the others survive a
// stale read, and a map removed whole removes the keys read (see
// removeOnlyKeysRead). A patch that replaces or removes a list (conditions,
// say), or removes another object whole, is locked: it carries child's
// resourceVersion, and when child's status is no longer base (another
// writer changed it since the read) it is a conflict error without a
// request. With lock, the patch never lands on a child deleted and created
// again under the name since child was read: it carries child's UID, which
// the object checks, and, on a status subresource, which ignores a UID,
// child's resourceVersion. It reports whether the status changed on the
// server.
func patchStatus(ctx context.Context, c client.Client, child client.Object, base, want any, lock bool) (bool, error) {
	have, err := object.ToMapWithoutManagedFields(child)
	if err != nil {
		return false, err
	}
	if equalStatus(have["status"], want) {
		return false, nil
	}
	// One map, rewritten in place and encoded once, below.
	p := object.MergeDiff(map[string]any{"status": base}, map[string]any{"status": want})
	if p == nil {
		return false, nil
	}
	if read, ok := base.(map[string]any); ok && len(read) > 0 && p["status"] == nil {
		// The whole status removed: remove the fields read, not those
		// another writer set since.
		p["status"] = nulls(read)
	}
	// A nested map removed whole removes the keys read, or locks.
	dropsWhole := removeOnlyKeysRead(p, map[string]any{"status": base}, goType(c, child))
	gvk, gvkErr := object.GVK(child, c.Scheme())
	has, known := statusSubresource(ctx, c, gvk)
	onObject := known && !has && gvkErr == nil
	lists := dropsWhole || replacesList(p, map[string]any{"status": base})
	var pre []precondition
	if lock && child.GetUID() != "" {
		// Checked on the object itself, ignored by a status subresource.
		pre = append(pre, precondition{"uid", string(child.GetUID())})
	}
	if lists || lock && !onObject {
		pre = append(pre, precondition{"resourceVersion", child.GetResourceVersion()})
	}
	data, err := encodePatch(p, pre...)
	if err != nil {
		return false, err
	}
	if lists && !equalStatus(have["status"], base) {
		return false, conflict(c, child, errors.New("its status changed since it was read, and the status patch replaces a list or removes an object"))
	}
	rv := child.GetResourceVersion()
	patch := client.RawPatch(types.MergePatchType, data)
	if onObject {
		if err := c.Patch(ctx, child, patch); err != nil {
			return false, recreated(c, child, err)
		}
		if child.GetResourceVersion() != rv {
			return true, nil
		}
		// Nothing written: the kind may have a status subresource now.
		scope.Of(ctx, c).Unlearn(gvk, factStatus)
	}
	if err := c.Status().Patch(ctx, child, patch); err != nil {
		if !apierrors.IsNotFound(err) {
			return false, err
		}
		// No status subresource (or no object: then this fails too).
		if err := c.Patch(ctx, child, patch); err != nil {
			return false, recreated(c, child, err)
		}
		if gvkErr == nil {
			scope.Of(ctx, c).Learn(gvk, factStatus, false)
		}
	} else if gvkErr == nil {
		scope.Of(ctx, c).Learn(gvk, factStatus, true)
	}
	return child.GetResourceVersion() != rv, nil
}

// factStatus is the fact a State learns of a kind (see [scope.State.Learn])
// when a write finds it with a status subresource (true) or without one
// (false): a status patch that succeeded or answered NotFound, or a write
// by CreateOrUpdate (see learnStatusSubresource). patchStatus writes the
// status of a kind without one on the object at once; CreateOrUpdate does
// not compare the status of a kind with one, which its update cannot
// write. A kind is known per cluster (the State of c's): one CRD may have a
// status subresource in one cluster of a fleet and none in another.
const factStatus = "status subresource"

// statusSubresource reports whether gvk has a status subresource in c's
// cluster, and whether that is known.
func statusSubresource(ctx context.Context, c client.Client, gvk schema.GroupVersionKind) (has, known bool) {
	return scope.Of(ctx, c).Learned(gvk, factStatus)
}

// learnStatusSubresource learns from the answer to an update of an object
// whose status live was (the update was locked on live's resourceVersion)
// and want asked for, whether its kind has a status
// subresource: an update that changed the status has none; one that kept
// the status live had when want asked for another one has one, which
// holds for a kind known to the scheme (a Go type: no field of want's
// status is pruned), or when the answer kept a value of live's that want
// set to another one (for a custom resource without a Go type, whose
// schema may prune fields want sets).
func learnStatusSubresource(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, live, want, answer map[string]any) {
	switch {
	case !equalStatus(answer["status"], live["status"]):
		scope.Of(ctx, c).Learn(gvk, factStatus, false)
	case equalStatus(want["status"], live["status"]):
	case c.Scheme().Recognizes(gvk) || keptAgainst(answer["status"], want["status"]):
		scope.Of(ctx, c).Learn(gvk, factStatus, true)
	}
}

// keptAgainst reports whether answer holds a value where want holds
// another one (not where want holds nothing, or answer nothing).
func keptAgainst(answer, want any) bool {
	a, aok := answer.(map[string]any)
	w, wok := want.(map[string]any)
	if !aok || !wok {
		return answer != nil && want != nil && !reflect.DeepEqual(answer, want)
	}
	for k, wv := range w {
		if av, ok := a[k]; ok && keptAgainst(av, wv) {
			return true
		}
	}
	return false
}

// replacesList reports whether a merge patch sets or removes a list (which
// a merge patch replaces whole) where base, the object it was made from,
// has one or it adds one.
func replacesList(patch, base any) bool {
	switch p := patch.(type) {
	case []any:
		return true
	case nil:
		_, isList := base.([]any)
		return isList
	case map[string]any:
		b, _ := base.(map[string]any)
		for k, v := range p {
			if replacesList(v, b[k]) {
				return true
			}
		}
	}
	return false
}

// conflict is the conflict error of a write not made because child changed
// since it was read.
func conflict(c client.Client, child client.Object, err error) error {
	gvk, gerr := object.GVK(child, c.Scheme())
	gr := schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}
	if gerr == nil {
		if m, merr := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); merr == nil {
			gr = m.Resource.GroupResource()
		}
	}
	return apierrors.NewConflict(gr, child.GetName(), err)
}

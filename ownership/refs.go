package ownership

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/steadyk8s/steady/internal/object"
	"github.com/steadyk8s/steady/internal/scope"
)

// reference builds owner's controller reference; it also returns what the
// reference and owner's record take from owner's kind (see
// [ownerKind.record]).
func reference(owner client.Object, scheme *runtime.Scheme) (metav1.OwnerReference, *ownerKind, error) {
	gvk, err := apiutil.GVKForObject(owner, scheme)
	if err != nil {
		return metav1.OwnerReference{}, nil, fmt.Errorf("ownership: %w", err)
	}
	k := new(newOwnerKind(gvk.GroupVersion().String(), gvk.Kind))
	return metav1.OwnerReference{APIVersion: k.apiVersion, Kind: gvk.Kind, Name: owner.GetName(), UID: owner.GetUID(),
		Controller: new(true), BlockOwnerDeletion: new(true)}, k, nil
}

// check refuses, from the objects alone, references that would not be
// honoured: an owner without a UID (the API server rejects the reference)
// and a namespaced owner of a child in another namespace or in none (the
// garbage collector looks the owner up in the child's namespace, does not
// find it and deletes the child).
func check(owner, child client.Object, scheme *runtime.Scheme) error {
	bad := func(field, reason string) error {
		return &invalidOwnerError{Child: object.Describe(child, scheme), Owner: object.Describe(owner, scheme), Field: field, Reason: reason}
	}
	if owner.GetUID() == "" {
		return bad("metadata.uid", "the owner has no UID (create it, or read it from the API server, first)")
	}
	switch ns := owner.GetNamespace(); {
	case ns == "" || child.GetNamespace() == ns:
		return nil // a cluster-scoped owner can own anything
	case child.GetNamespace() == "":
		return bad("metadata.namespace", "a namespaced owner cannot own a cluster-scoped object (or one whose namespace is not set)")
	default:
		return bad("metadata.namespace", fmt.Sprintf("the child is in namespace %q, the owner in %q; owner references cannot cross namespaces", child.GetNamespace(), ns))
	}
}

// validateScope refuses a namespaced owner of a cluster-scoped child: it
// asks c (its REST mapper) whether the child's type is namespaced, once
// per kind and cluster (see factNamespaced).
func validateScope(ctx context.Context, c client.Client, owner, child client.Object) error {
	if owner.GetNamespace() == "" {
		return nil
	}
	// The kind the mapper is asked about (c.IsObjectNamespaced): a typed
	// child's Go type, whatever its type meta says.
	gvk, gvkErr := apiutil.GVKForObject(child, c.Scheme())
	if gvkErr == nil {
		if ns, _ := scope.Of(ctx, c).Learned(gvk, factNamespaced); ns {
			return nil
		}
	}
	namespaced, err := c.IsObjectNamespaced(child)
	if err != nil {
		return fmt.Errorf("ownership: %w", err)
	}
	if !namespaced {
		return &invalidOwnerError{Child: object.Describe(child, c.Scheme()), Owner: object.Describe(owner, c.Scheme()),
			Field: "metadata.namespace", Reason: "a namespaced owner cannot own a cluster-scoped object"}
	}
	if gvkErr == nil {
		scope.Of(ctx, c).Learn(gvk, factNamespaced, true)
	}
	return nil
}

// factNamespaced is the fact a State learns of a kind that c's REST mapper
// said is namespaced: validateScope asks the mapper once per kind and
// cluster, not before every write (in controller-runtime v0.24 one question
// allocates some 70 objects, as much as the rest of a converged child's
// write). Only that answer is kept: a cluster-scoped kind, or a failed
// mapping, is asked again on every call, so a refusal always comes from
// the mapper.
const factNamespaced = "namespaced"

// setController makes owner the controller of child in memory; rec is
// child's record, which the caller knows (recordOf(child)). With o.Record
// it records owner on child ([OwnerKindLabel] and [OwnerNameLabel], or the
// annotation when the owner's kind or name is not a label value); a child
// that already records owner as it would be written keeps its record.
// Without it no record of owner is written. Either way the record is read:
// another controller is an [*AlreadyOwnedError] unless o.Adopt, and so is
// a child without a controller whose record, in either form, names
// another owner (adopted, that record is removed). A child controlled by
// an earlier owner of owner's kind and name (deleted and created again
// since, as a restore from a backup does: the reference holds the old UID)
// that records owner is taken back: the stale reference is replaced by
// owner's, and returned, for the caller to check owner against the API
// server (see ownerIsCurrent). An owner without a UID, or a namespaced
// owner of a child in another namespace or in none, is an
// [*invalidOwnerError] and child is left as it was.
func setController(owner, child client.Object, rec recordedOn, scheme *runtime.Scheme, o MutateOptions) (*metav1.OwnerReference, error) {
	if err := check(owner, child, scheme); err != nil {
		return nil, err
	}
	ref, k, err := reference(owner, scheme)
	if err != nil {
		return nil, err
	}
	r := k.record(ref.Name, owner.GetNamespace())
	// takes: the call takes the child (free, or another controller's:
	// adopted or stale), rather than keeping one owner controls already.
	cur := metav1.GetControllerOfNoCopy(child)
	takes := cur == nil || cur.UID != ref.UID
	replace, stale, err := claim(owner, child, ref, rec, r, scheme, o.Adopt)
	if err != nil {
		return nil, err
	}
	refs := child.GetOwnerReferences()
	if replace != nil {
		refs = slices.DeleteFunc(slices.Clone(refs), func(r metav1.OwnerReference) bool { return r.UID == replace.UID })
	}
	setReference(child, refs, ref)
	// rec is still child's record: setReference changes no label or
	// annotation. A current record is left as it is.
	switch {
	case o.Record && !rec.current(r):
		writeRecord(child, r)
	case !o.Record && takes:
		// Taking the child: another owner's record goes with its claim.
		// On a child owner controls already, it is another writer's, not
		// this call's to remove.
		removeOthers(child, r)
	}
	if !stale {
		replace = nil
	}
	return replace, nil
}

// claim decides, from the objects alone, whether owner (whose controller
// reference is ref, and record r) may become the controller of child
// (whose record is rec: recordOf(child)), and returns the controller
// reference of child to replace, if any, and whether that one is stale (an
// earlier owner of owner's kind and name, recorded on child) rather than
// another owner's that adopt takes over.
func claim(owner, child client.Object, ref metav1.OwnerReference, rec recordedOn, r ownerRecord, scheme *runtime.Scheme, adopt bool) (*metav1.OwnerReference, bool, error) {
	form, recorded := rec.other(r)
	cur := metav1.GetControllerOfNoCopy(child)
	switch {
	case cur == nil && (form == "" || adopt):
		return nil, false, nil // free, ours by the record, or adopted
	case cur == nil:
		return nil, false, &AlreadyOwnedError{Child: object.Describe(child, scheme), Owner: object.Describe(owner, scheme),
			Recorded: recorded, RecordedIn: form}
	case cur.UID == ref.UID:
		return nil, false, nil
	case form == "" && rec.ours(r) && cur.Kind == ref.Kind && cur.Name == ref.Name && groupOf(cur.APIVersion) == groupOf(ref.APIVersion):
		return cur, true, nil // owner was deleted and created again
	case adopt:
		return cur, false, nil
	default:
		e := &AlreadyOwnedError{Child: object.Describe(child, scheme), Owner: object.Describe(owner, scheme),
			Controller: controllerName(cur)}
		if cur.Kind == ref.Kind && cur.Name == ref.Name && groupOf(cur.APIVersion) == groupOf(ref.APIVersion) {
			e.sameName = fmt.Sprintf("%s (UID %s) is not the %[1]s given (UID %[3]s): either the one given was read from a lagging cache after it was deleted and created again, or the child's controller is an earlier one, which a child is taken back from only when it records its owner (ownership.RecordOwner)",
				e.Owner, cur.UID, ref.UID)
		}
		return nil, false, e
	}
}

// setReference puts ref in refs (replacing one with its UID, or the same
// kind and name) and sets the result on child.
func setReference(child client.Object, refs []metav1.OwnerReference, ref metav1.OwnerReference) {
	out := slices.Clone(refs)
	i := slices.IndexFunc(out, func(r metav1.OwnerReference) bool {
		return r.UID == ref.UID || (r.Kind == ref.Kind && r.Name == ref.Name && r.APIVersion == ref.APIVersion)
	})
	if i >= 0 {
		out[i] = ref
	} else {
		out = append(out, ref)
	}
	child.SetOwnerReferences(out)
}

// RemoveOwnerReference removes owner's reference from child, controller or
// not, and reports whether it was there. Removing owner's controller
// reference also removes child's record of owner ([OwnerKindLabel] and
// [OwnerNameLabel], or the annotation: each form that records owner, and
// the one label left of owner's record when another writer removed the
// other), so that the released child is free for another owner; a form
// that records another owner is left as it is.
func RemoveOwnerReference(owner, child client.Object) bool {
	refs := child.GetOwnerReferences()
	i := slices.IndexFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == owner.GetUID() })
	if i < 0 {
		return false
	}
	if removed := refs[i]; removed.Controller != nil && *removed.Controller {
		removeRecord(child, newRecord(removed, owner.GetNamespace()))
	}
	child.SetOwnerReferences(slices.DeleteFunc(slices.Clone(refs), func(r metav1.OwnerReference) bool { return r.UID == owner.GetUID() }))
	return true
}

func groupOf(apiVersion string) string {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return apiVersion
	}
	return gv.Group
}

// ownerIsCurrent reads owner through r (the API reader; nil: none, c
// then) and returns a conflict error to requeue on unless the API server
// (or r's cache) holds it with its UID:
// before a controller reference of child to an earlier owner of its kind
// and name (stale) is replaced, owner must be the one that exists now, not
// a stale copy of a deleted one, whose reference the garbage collector
// would take for a missing owner's and delete child.
func ownerIsCurrent(ctx context.Context, r client.Reader, c client.Client, owner, child client.Object, stale *metav1.OwnerReference) error {
	if r == nil {
		r = c
	}
	live := object.EmptyLike(owner)
	err := r.Get(ctx, client.ObjectKeyFromObject(owner), live)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("ownership: reading %s, the owner of %s: %w", object.Describe(owner, c.Scheme()), object.Describe(child, c.Scheme()), err)
	case err == nil && live.GetUID() == owner.GetUID():
		return nil
	}
	now := "it is not found"
	if err == nil {
		now = fmt.Sprintf("it now has UID %s", live.GetUID())
	}
	return conflict(c, child, fmt.Errorf("ownership: %s is controlled by %s with UID %s, and the owner passed, %s, has UID %s, but %s: the owner passed is stale (read it again)",
		object.Describe(child, c.Scheme()), controllerName(stale), stale.UID, object.Describe(owner, c.Scheme()), owner.GetUID(), now))
}

// controllerName names the controller ref of child as "Kind name": the
// reference does not say whether the controller is namespaced.
func controllerName(ref *metav1.OwnerReference) string { return ref.Kind + " " + ref.Name }

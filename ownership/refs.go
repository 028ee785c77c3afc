package ownership

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/steadyk8s/steady/internal/object"
)

// reference builds owner's reference.
func reference(owner client.Object, scheme *runtime.Scheme, controller bool) (metav1.OwnerReference, error) {
	gvk, err := apiutil.GVKForObject(owner, scheme)
	if err != nil {
		return metav1.OwnerReference{}, fmt.Errorf("ownership: %w", err)
	}
	ref := metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: owner.GetName(), UID: owner.GetUID()}
	if controller {
		ref.Controller, ref.BlockOwnerDeletion = new(true), new(true)
	}
	return ref, nil
}

// check refuses, from the objects alone, references that would not be
// honoured: an owner without a UID (the API server rejects the reference)
// and a namespaced owner of a child in another namespace or in none (the
// garbage collector looks the owner up in the child's namespace, does not
// find it and deletes the child).
func check(owner, child client.Object, scheme *runtime.Scheme) error {
	bad := func(field, reason string) error {
		return &InvalidOwnerError{Child: object.Describe(child, scheme), Owner: object.Describe(owner, scheme), Field: field, Reason: reason}
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

// validate is [check], and asks c whether the child's type is namespaced.
func validate(c client.Client, owner, child client.Object) error {
	if err := check(owner, child, c.Scheme()); err != nil || owner.GetNamespace() == "" {
		return err
	}
	namespaced, err := c.IsObjectNamespaced(child)
	if err != nil {
		return fmt.Errorf("ownership: %w", err)
	}
	if !namespaced {
		return &InvalidOwnerError{Child: object.Describe(child, c.Scheme()), Owner: object.Describe(owner, c.Scheme()),
			Field: "metadata.namespace", Reason: "a namespaced owner cannot own a cluster-scoped object"}
	}
	return nil
}

// SetControllerReference makes owner the controller of child in memory and
// reports whether child changed. Another controller is an
// [*AlreadyOwnedError] unless [Adopt]{} is given. As with controllerutil,
// an owner without a UID, or a namespaced owner of a child in another
// namespace or in none, is an [*InvalidOwnerError] and child is left as it
// was.
func SetControllerReference(owner, child client.Object, scheme *runtime.Scheme, opts ...SetControllerReferenceOption) (bool, error) {
	o := SetControllerReferenceOptions{}
	for _, opt := range opts {
		opt.ApplyToSetControllerReference(&o)
	}
	if err := check(owner, child, scheme); err != nil {
		return false, err
	}
	ref, err := reference(owner, scheme, true)
	if err != nil {
		return false, err
	}
	refs := child.GetOwnerReferences()
	if cur := metav1.GetControllerOfNoCopy(child); cur != nil && cur.UID != ref.UID {
		if !o.Adopt {
			return false, &AlreadyOwnedError{Child: object.Describe(child, scheme), Owner: object.Describe(owner, scheme),
				Controller: controllerName(cur)}
		}
		refs = slices.DeleteFunc(slices.Clone(refs), func(r metav1.OwnerReference) bool { return r.UID == cur.UID })
	}
	return setReference(child, refs, ref), nil
}

// SetOwnerReference adds owner as a non-controller owner of child, or
// updates its reference, and reports whether child changed. It refuses the
// references [SetControllerReference] refuses, with an [*InvalidOwnerError].
func SetOwnerReference(owner, child client.Object, scheme *runtime.Scheme) (bool, error) {
	if err := check(owner, child, scheme); err != nil {
		return false, err
	}
	ref, err := reference(owner, scheme, false)
	if err != nil {
		return false, err
	}
	if cur := slices.IndexFunc(child.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == ref.UID }); cur >= 0 {
		existing := child.GetOwnerReferences()[cur]
		ref.Controller, ref.BlockOwnerDeletion = existing.Controller, existing.BlockOwnerDeletion // keep a controller reference one
	}
	return setReference(child, child.GetOwnerReferences(), ref), nil
}

// setReference puts ref in refs (replacing one with its UID, or the same
// kind and name) and sets it on child when that changes anything.
func setReference(child client.Object, refs []metav1.OwnerReference, ref metav1.OwnerReference) bool {
	out := slices.Clone(refs)
	i := slices.IndexFunc(out, func(r metav1.OwnerReference) bool {
		return r.UID == ref.UID || (r.Kind == ref.Kind && r.Name == ref.Name && r.APIVersion == ref.APIVersion)
	})
	if i >= 0 {
		out[i] = ref
	} else {
		out = append(out, ref)
	}
	if equalRefs(out, child.GetOwnerReferences()) {
		return false
	}
	child.SetOwnerReferences(out)
	return true
}

func equalRefs(a, b []metav1.OwnerReference) bool {
	return slices.EqualFunc(a, b, func(x, y metav1.OwnerReference) bool {
		return x.APIVersion == y.APIVersion && x.Kind == y.Kind && x.Name == y.Name && x.UID == y.UID &&
			ptrEq(x.Controller, y.Controller) && ptrEq(x.BlockOwnerDeletion, y.BlockOwnerDeletion)
	})
}

func ptrEq(a, b *bool) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }

// RemoveOwnerReference removes owner's reference from child, controller or
// not, and reports whether it was there.
func RemoveOwnerReference(owner, child client.Object) bool {
	refs := child.GetOwnerReferences()
	kept := slices.DeleteFunc(slices.Clone(refs), func(r metav1.OwnerReference) bool { return r.UID == owner.GetUID() })
	if len(kept) == len(refs) {
		return false
	}
	child.SetOwnerReferences(kept)
	return true
}

// controllerName names the controller ref of child as "Kind name": the
// reference does not say whether the controller is namespaced.
func controllerName(ref *metav1.OwnerReference) string { return ref.Kind + " " + ref.Name }

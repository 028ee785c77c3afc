package ownership

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/object"
	"github.com/steadyk8s/steady/internal/observe"
)

// Apply makes owner the controller of child and server-side applies child
// with the given field manager: only the fields child sets are owned and
// compared, so applying the same child again changes nothing. It reports
// whether the child was created, updated or left unchanged (its
// resourceVersion did not move). On success child holds the API server's
// answer. Besides owner's controller reference, the child's non-controller
// owner references are applied ([SetOwnerReference]); a controller
// reference of another owner on child is not. A field this manager applied
// before and child no longer sets is
// removed by the API server (server-side apply's ownership rules). With
// [Adopt]{}, the other controller's reference is removed first, by a patch
// of its own: if the apply then fails, the result is updated and the error
// says that the child was left without a controller.
func Apply(ctx context.Context, c client.Client, owner, child client.Object, fieldManager string, opts ...ApplyOption) (controllerutil.OperationResult, error) {
	o := ApplyOptions{}
	for _, opt := range opts {
		opt.ApplyToApply(&o)
	}
	c = observe.Client(c, "ownership")
	if err := validate(c, owner, child); err != nil {
		return controllerutil.OperationResultNone, err
	}
	gvk, err := object.GVK(child, c.Scheme())
	if err != nil {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: %w", err)
	}
	name := object.Describe(child, c.Scheme())
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	rv, released := "", ""
	if err := c.Get(ctx, client.ObjectKeyFromObject(child), live); err == nil {
		rv = live.GetResourceVersion()
		if cur := metav1.GetControllerOfNoCopy(live); cur != nil && cur.UID != owner.GetUID() {
			if !o.Adopt {
				return controllerutil.OperationResultNone, &AlreadyOwnedError{Child: name,
					Owner: object.Describe(owner, c.Scheme()), Controller: controllerName(cur)}
			}
			if err := release(ctx, c, live, cur.UID); err != nil {
				return controllerutil.OperationResultNone, err
			}
			released = controllerName(cur)
		}
	} else if !apierrors.IsNotFound(err) {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: reading %s: %w", name, err)
	}

	if err := object.NormalizeJSON(child); err != nil {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: %s: %w", name, err)
	}
	m, err := object.ToMap(child)
	if err != nil {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: %w", err)
	}
	u := &unstructured.Unstructured{Object: m}
	delete(u.Object, "status")
	for _, f := range append(serverMetadata, "ownerReferences") {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	u.SetGroupVersionKind(gvk)
	ref, err := reference(owner, c.Scheme(), true)
	if err != nil {
		return controllerutil.OperationResultNone, err
	}
	refs := []metav1.OwnerReference{ref}
	for _, r := range child.GetOwnerReferences() {
		if r.UID != ref.UID && (r.Controller == nil || !*r.Controller) {
			refs = append(refs, r) // the caller's other owners (SetOwnerReference)
		}
	}
	u.SetOwnerReferences(refs)
	applyOpts := []client.ApplyOption{client.FieldOwner(fieldManager)}
	if o.Force {
		applyOpts = append(applyOpts, client.ForceOwnership)
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), applyOpts...); err != nil {
		if released != "" {
			return controllerutil.OperationResultUpdated, fmt.Errorf("ownership: removed the controller reference of %s from %s, but applying it failed (it has no controller now): %w",
				released, name, err)
		}
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: applying %s: %w", name, err)
	}
	if err := object.FromMap(u.Object, child); err != nil {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: %w", err)
	}
	switch {
	case rv == "":
		return controllerutil.OperationResultCreated, nil
	case rv == u.GetResourceVersion():
		return controllerutil.OperationResultNone, nil
	default:
		return controllerutil.OperationResultUpdated, nil
	}
}

// release drops the controller reference with the given UID from live, under
// optimistic locking, so that another owner's reference is only removed by an
// explicit adoption.
func release(ctx context.Context, c client.Client, live *unstructured.Unstructured, uid types.UID) error {
	before := live.DeepCopy()
	var kept []metav1.OwnerReference
	for _, r := range live.GetOwnerReferences() {
		if r.UID != uid {
			kept = append(kept, r)
		}
	}
	live.SetOwnerReferences(kept)
	if err := c.Patch(ctx, live, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("ownership: adopting %s: %w", object.Describe(live, c.Scheme()), err)
	}
	return nil
}

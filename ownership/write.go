package ownership

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/indexer"
)

// MutateFn sets the desired state on the child it closes over. It runs on
// the live child (or on the new one, when there is none yet).
type MutateFn func() error

// CreateOrUpdate reads child (by its namespace and name), runs mutate on it,
// makes owner its controller, and creates it or, when something the caller
// set differs from the live object, updates it. It reports what it did.
// Fields mutate leaves unset do not count, so a wholesale assignment that
// drops server defaults does not write.
func CreateOrUpdate(ctx context.Context, c client.Client, owner, child client.Object, mutate MutateFn, opts ...Option) (controllerutil.OperationResult, error) {
	return createOr(ctx, c, owner, child, mutate, opts, false, func(existing client.Object, _ bool) error {
		return c.Update(ctx, child)
	})
}

// CreateOrPatch is [CreateOrUpdate] writing a merge patch of the difference
// instead of the whole object, so that concurrent changes to fields the
// caller did not touch survive, and patching status too when mutate
// changed it.
func CreateOrPatch(ctx context.Context, c client.Client, owner, child client.Object, mutate MutateFn, opts ...Option) (controllerutil.OperationResult, error) {
	return createOr(ctx, c, owner, child, mutate, opts, true, func(existing client.Object, mainChanged bool) error {
		wanted := child.DeepCopyObject().(client.Object)
		if !mainChanged {
			return writeStatus(ctx, c, child, wanted, existing)
		}
		if err := c.Patch(ctx, child, client.MergeFrom(existing)); err != nil {
			return err
		}
		return writeStatus(ctx, c, child, wanted, child)
	})
}

// writeStatus patches child's status subresource to wanted's status when
// current, the object as the API server holds it, does not hold it.
func writeStatus(ctx context.Context, c client.Client, child, wanted, current client.Object) error {
	changed, err := statusDiffers(wanted, current)
	if err != nil || !changed {
		return err
	}
	base := child.DeepCopyObject().(client.Object)
	if err := copyStatus(current, base); err != nil {
		return err
	}
	if err := copyStatus(wanted, child); err != nil {
		return err
	}
	return c.Status().Patch(ctx, child, client.MergeFrom(base))
}

// createOr is the shared flow; withStatus also compares status, and write
// gets whether more than status changed.
func createOr(ctx context.Context, c client.Client, owner, child client.Object, mutate MutateFn, opts []Option, withStatus bool, write func(existing client.Object, mainChanged bool) error) (controllerutil.OperationResult, error) {
	if err := validate(c, owner, child); err != nil {
		return controllerutil.OperationResultNone, err
	}
	key := client.ObjectKeyFromObject(child)
	if err := c.Get(ctx, key, child); err != nil {
		if !apierrors.IsNotFound(err) {
			return controllerutil.OperationResultNone, fmt.Errorf("ownership: reading %s: %w", describe(child, c.Scheme()), err)
		}
		if err := mutateChild(c, owner, child, key, mutate, opts); err != nil {
			return controllerutil.OperationResultNone, err
		}
		wanted := child.DeepCopyObject().(client.Object)
		if err := c.Create(ctx, child); err != nil {
			return controllerutil.OperationResultNone, fmt.Errorf("ownership: creating %s: %w", describe(child, c.Scheme()), err)
		}
		// A create drops status where the type has a status subresource.
		if err := writeStatus(ctx, c, child, wanted, child); err != nil {
			return controllerutil.OperationResultCreated, fmt.Errorf("ownership: writing the status of %s: %w", describe(child, c.Scheme()), err)
		}
		return controllerutil.OperationResultCreated, nil
	}
	existing := child.DeepCopyObject().(client.Object)
	if err := mutateChild(c, owner, child, key, mutate, opts); err != nil {
		return controllerutil.OperationResultNone, err
	}
	differs, err := differsFrom(child, existing)
	if err != nil {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: %s: %w", describe(child, c.Scheme()), err)
	}
	statusDiff := false
	if withStatus {
		if statusDiff, err = statusDiffers(child, existing); err != nil {
			return controllerutil.OperationResultNone, fmt.Errorf("ownership: %s: %w", describe(child, c.Scheme()), err)
		}
	}
	if !differs && !statusDiff {
		reflect.ValueOf(child).Elem().Set(reflect.ValueOf(existing).Elem()) // show the live state
		return controllerutil.OperationResultNone, nil
	}
	if err := write(existing, differs); err != nil {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: updating %s: %w", describe(child, c.Scheme()), err)
	}
	return controllerutil.OperationResultUpdated, nil
}

func mutateChild(c client.Client, owner, child client.Object, key client.ObjectKey, mutate MutateFn, opts []Option) error {
	if mutate != nil {
		if err := mutate(); err != nil {
			return err
		}
	}
	if client.ObjectKeyFromObject(child) != key {
		return fmt.Errorf("ownership: mutate changed the name or namespace of %s", key)
	}
	_, err := SetControllerReference(owner, child, c.Scheme(), opts...)
	return err
}

// differsFrom reports whether want sets any field (but status) to a value
// that have does not hold.
func differsFrom(want, have client.Object) (bool, error) {
	w, h, err := maps(want, have)
	if err != nil {
		return false, err
	}
	delete(w, "status")
	return !subset(w, h), nil
}

func statusDiffers(want, have client.Object) (bool, error) {
	w, h, err := maps(want, have)
	if err != nil {
		return false, err
	}
	return !subset(w["status"], h["status"]), nil
}

func maps(a, b client.Object) (map[string]any, map[string]any, error) {
	am, err := toMap(a)
	if err != nil {
		return nil, nil, err
	}
	bm, err := toMap(b)
	return am, bm, err
}

func toMap(obj client.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object, nil
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

func copyStatus(from, to client.Object) error {
	f, err := toMap(from)
	if err != nil {
		return err
	}
	t, err := toMap(to)
	if err != nil {
		return err
	}
	if s, ok := f["status"]; ok {
		t["status"] = runtime.DeepCopyJSONValue(s)
	} else {
		delete(t, "status")
	}
	if u, ok := to.(*unstructured.Unstructured); ok {
		u.Object = t
		return nil
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(t, to)
}

// subset reports whether every value set in want is in have: maps by key,
// lists element by element with the same length, scalars equal. Unset
// (nil) values and empty maps or lists in want match anything.
func subset(want, have any) bool {
	switch w := want.(type) {
	case nil:
		return true
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, v := range w {
			if !subset(v, h[k]) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		if len(w) != len(h) {
			return false
		}
		for i := range w {
			if !subset(w[i], h[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(want, have)
	}
}

// Apply makes owner the controller of child and server-side applies child
// with the given field manager: only the fields child sets are owned and
// compared, so applying the same child again changes nothing. It reports
// whether the child was created, updated or left unchanged (its
// resourceVersion did not move). On success child holds the API server's
// answer.
func Apply(ctx context.Context, c client.Client, owner, child client.Object, fieldManager string, opts ...Option) (controllerutil.OperationResult, error) {
	o := Options{}
	for _, opt := range opts {
		opt(&o)
	}
	if err := validate(c, owner, child); err != nil {
		return controllerutil.OperationResultNone, err
	}
	gvk, err := apiutil.GVKForObject(child, c.Scheme())
	if err != nil {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: %w", err)
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	rv := ""
	if err := c.Get(ctx, client.ObjectKeyFromObject(child), live); err == nil {
		rv = live.GetResourceVersion()
		if cur := metav1.GetControllerOfNoCopy(live); cur != nil && cur.UID != owner.GetUID() {
			if !o.Adopt {
				return controllerutil.OperationResultNone, &AlreadyOwnedError{Child: describe(child, c.Scheme()),
					Owner: describe(owner, c.Scheme()), Controller: fmt.Sprintf("%s %s", cur.Kind, cur.Name)}
			}
			if err := release(ctx, c, live, cur.UID); err != nil {
				return controllerutil.OperationResultNone, err
			}
		}
	} else if !apierrors.IsNotFound(err) {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: reading %s: %w", describe(child, c.Scheme()), err)
	}

	m, err := toMap(child)
	if err != nil {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: %w", err)
	}
	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(m)}
	delete(u.Object, "status")
	for _, f := range []string{"managedFields", "resourceVersion", "uid", "generation", "creationTimestamp", "selfLink", "ownerReferences"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	u.SetGroupVersionKind(gvk)
	ref, err := reference(owner, c.Scheme(), true)
	if err != nil {
		return controllerutil.OperationResultNone, err
	}
	u.SetOwnerReferences([]metav1.OwnerReference{ref})
	applyOpts := []client.ApplyOption{client.FieldOwner(fieldManager)}
	if o.Force {
		applyOpts = append(applyOpts, client.ForceOwnership)
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), applyOpts...); err != nil {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: applying %s: %w", describe(child, c.Scheme()), err)
	}
	if err := fromMap(u, child); err != nil {
		return controllerutil.OperationResultNone, err
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
func release(ctx context.Context, c client.Client, live *unstructured.Unstructured, uid any) error {
	before := live.DeepCopy()
	var kept []metav1.OwnerReference
	for _, r := range live.GetOwnerReferences() {
		if r.UID != uid {
			kept = append(kept, r)
		}
	}
	live.SetOwnerReferences(kept)
	if err := c.Patch(ctx, live, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("ownership: adopting %s: %w", describe(live, c.Scheme()), err)
	}
	return nil
}

func fromMap(u *unstructured.Unstructured, into client.Object) error {
	if out, ok := into.(*unstructured.Unstructured); ok {
		out.Object = u.Object
		return nil
	}
	reflect.ValueOf(into).Elem().Set(reflect.Zero(reflect.TypeOf(into).Elem()))
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return fmt.Errorf("ownership: %w", err)
	}
	return nil
}

// ListChildren lists into list the objects of list's kind that owner
// controls, in owner's namespace (everywhere for a cluster-scoped owner).
// It uses the indexer.ControllerOwner index when the reader has it, and
// lists and filters otherwise; either way it keeps only children of this
// owner's UID.
func ListChildren(ctx context.Context, c client.Client, owner client.Object, list client.ObjectList, opts ...client.ListOption) error {
	gvk, err := apiutil.GVKForObject(owner, c.Scheme())
	if err != nil {
		return fmt.Errorf("ownership: %w", err)
	}
	if owner.GetNamespace() != "" {
		opts = append(opts, client.InNamespace(owner.GetNamespace()))
	}
	err = indexer.ListByControllerOwner(ctx, c, list, gvk.GroupKind(), owner.GetName(), opts...)
	var nre *indexer.NotRegisteredError
	if asNotRegistered(err, &nre) {
		err = c.List(ctx, list, opts...)
	}
	if err != nil {
		return fmt.Errorf("ownership: listing the children of %s: %w", describe(owner, c.Scheme()), err)
	}
	return meta.SetList(list, filterControlled(list, owner))
}

func filterControlled(list client.ObjectList, owner client.Object) []runtime.Object {
	items, _ := meta.ExtractList(list)
	var out []runtime.Object
	for _, it := range items {
		if o, ok := it.(client.Object); ok {
			if ref := metav1.GetControllerOfNoCopy(o); ref != nil && ref.UID == owner.GetUID() {
				out = append(out, it)
			}
		}
	}
	return out
}

func asNotRegistered(err error, target **indexer.NotRegisteredError) bool {
	return err != nil && errors.As(err, target)
}

package ownership

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/backoff"
	"github.com/steadyk8s/steady/internal/object"
	"github.com/steadyk8s/steady/internal/observe"
	"github.com/steadyk8s/steady/internal/scope"
)

// appliedSlot is where Apply remembers, per child and owner (the slot
// ends in the owner's UID), its last successful answer (UID and
// resourceVersion) and a sum of the configuration it applied.
const appliedSlot = "apply|"

// createOnly is the resourceVersion of an apply that must create the
// child: server-side apply ignores the resourceVersion when it creates, and
// refuses one that is not the child's with a conflict when the child
// exists. No stored object has it: it is etcd's first revision, written
// before any child can be.
const createOnly = "1"

// Apply makes owner the controller of child and server-side applies child
// with the given field manager: only the fields child sets are owned and
// compared, so applying the same child again changes nothing. On success
// child holds the API server's answer. Besides owner's controller
// reference, the child's non-controller owner references are applied
// ([SetOwnerReference]); a controller reference of another owner on child
// is not. The owner is recorded as [SetControllerReference] records it
// ([OwnerKindLabel] and [OwnerNameLabel], or [OwnerAnnotation] when the
// owner's kind or name is not a label value), and a child is taken or
// refused by its record as [SetControllerReference] says. The apply
// always carries the record in that form and not the other: an
// [OwnerAnnotation] of an earlier version that this field manager applied
// is removed by the API server with the apply, one that another writer
// owns (a restore) stays. A stale controller reference of an earlier owner
// of owner's kind and name, or a record that names another owner (with
// [Adopt]{}) or names owner otherwise than the apply does, is replaced by
// a patch of its own before the apply, as an adopted controller's
// reference is. A field this manager applied before and child no longer
// sets is removed by the API server (server-side apply's ownership rules).
// With [Adopt]{}, the other controller's reference is removed first, by a
// patch of its own: if the apply then fails, the result is updated and the
// error says that the child was left without a controller.
//
// Nothing is sent when neither the child (its UID and resourceVersion as
// read) nor what is applied (field manager, force, configuration) changed
// since this process's last successful apply of it for this owner: the
// result is unchanged. That memory is bounded (see docs/ownership.md).
//
// The result says what the API server did: created when the apply created
// the child, unchanged when it left it as it was (its resourceVersion did
// not move), updated otherwise; beside an error, empty where nothing was
// written. To know that through a cache that may be
// behind, the apply is locked: it carries the resourceVersion read, or,
// for a child the read did not find, one no stored object has, so that it
// can only create. A lock that no longer holds (the read was stale: a cache
// behind another writer, or that has not seen the child yet) is a conflict:
// the child is then read again, through [WithAPIReader]'s reader when given
// (one GET), else through the client until it shows a newer child (backing
// off, about 2.5 seconds at most), checked (another controller's child is
// an [*AlreadyOwnedError]) and applied again, at most 3 times in all. A
// child the client does not show is read through the API reader first
// when one is given; without one, Apply's own last answer for this child
// and owner, if it remembers one, is the lock (a child it created a moment
// ago). The read is of child's type, so a typed child is read from a
// manager's cache (list and watch permissions on its kind, as for
// CreateOrUpdate); an unstructured one is read from the API server unless
// the manager's client caches unstructured objects.
func Apply(ctx context.Context, c client.Client, owner, child client.Object, fieldManager string, opts ...ApplyOption) (controllerutil.OperationResult, error) {
	return result(apply(ctx, c, owner, child, fieldManager, opts))
}

func apply(ctx context.Context, c client.Client, owner, child client.Object, fieldManager string, opts []ApplyOption) (controllerutil.OperationResult, error) {
	o := ApplyOptions{}
	for _, opt := range opts {
		opt.ApplyToApply(&o)
	}
	// The reader of re-reads after a conflict. A child the client does not
	// show is read through o.APIReader only: through For's, every new child
	// would cost a GET.
	conflictReader := rereader(ctx, c, o.APIReader)
	ctx = scope.Carry(ctx, c) // the State of c's cluster, for the calls through the wrapper below
	c = observe.Client(c, "ownership")
	if err := validate(ctx, c, owner, child); err != nil {
		return controllerutil.OperationResultNone, err
	}
	gvk, err := object.GVK(child, c.Scheme())
	if err != nil {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: %w", err)
	}
	name := object.Describe(child, c.Scheme())
	u, err := applyConfiguration(c, owner, child)
	if err != nil {
		return controllerutil.OperationResultNone, err
	}
	ref, k, err := reference(owner, c.Scheme(), true)
	if err != nil {
		return controllerutil.OperationResultNone, err
	}
	r := k.record(ref.Name, owner.GetNamespace())
	u.SetGroupVersionKind(gvk)
	key := childKey(ctx, c, gvk, child, appliedSlot+string(owner.GetUID()))
	applyOpts := []client.ApplyOption{client.FieldOwner(fieldManager)}
	if o.Force {
		applyOpts = append(applyOpts, client.ForceOwnership)
	}

	live, err := readForApply(ctx, c, o.APIReader, child, name, nil, nil)
	if err != nil {
		return controllerutil.OperationResultNone, err
	}
	// Nothing changed since the last apply of this configuration, neither
	// the child (its resourceVersion is the answer's) nor what is applied:
	// the apply would change nothing.
	config, sumErr := sum(fieldManager, o.Force, u.Object)
	if m, ok := recall(key); ok && sumErr == nil && live != nil && m.sum == config &&
		m.uid == live.GetUID() && m.rv == live.GetResourceVersion() && metav1.IsControlledBy(live, owner) {
		object.Copy(child, live)
		return controllerutil.OperationResultNone, nil
	}
	released := ""
	for attempt := 1; ; attempt++ {
		// lock is the child the apply is locked on: the one read, else the
		// one Apply's last answer showed, else none (create only).
		lock := memo{rv: createOnly}
		if live != nil {
			cur, stale, err := claim(owner, live, ref, recordOf(live), r, c.Scheme(), o.Adopt)
			if err != nil {
				return resultAfterRelease(released), err
			}
			if cur != nil && stale {
				r := conflictReader
				if r == nil {
					r = c
				}
				if err := ownerIsCurrent(ctx, r, c, owner, live, cur); err != nil {
					return resultAfterRelease(released), err
				}
			}
			// Another controller reference (stale or adopted) and a record
			// that is not owner's as the apply writes it, which other field
			// managers may own, are replaced by a patch first: the apply
			// would leave the child two controllers or two records, and
			// conflict on the record.
			if rec := recordOf(live); cur != nil || (!rec.none() && !rec.current(r)) {
				var uid types.UID
				if cur != nil {
					uid = cur.UID
				}
				if err := release(ctx, c, live, uid, r); err != nil {
					return resultAfterRelease(released), err
				}
				if cur != nil {
					released = fmt.Sprintf("removed the controller reference of %s from %s (it has no controller now)", controllerName(cur), name)
				} else {
					released = fmt.Sprintf("recorded %s as the owner of %s (%s), in place of %s", object.Describe(owner, c.Scheme()), name, formKeys(r.form()), rec.describe(r))
				}
			}
			lock = memo{uid: live.GetUID(), rv: live.GetResourceVersion()}
		} else if m, ok := recall(key); ok {
			lock = m
		}
		answer := u.DeepCopy()
		answer.SetResourceVersion(lock.rv)
		err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(answer), applyOpts...)
		if err == nil {
			if sumErr == nil {
				keep(key, child, memo{uid: answer.GetUID(), rv: answer.GetResourceVersion(), sum: config})
			}
			op := applyResult(lock, answer, released != "")
			if err := object.FromMap(answer.Object, child); err != nil {
				return op, fmt.Errorf("ownership: applied %s, but reading the answer failed: %w", name, err)
			}
			return op, nil
		}
		if staleLock(err) {
			drop(key)
			if attempt < maxAttempts {
				if live, err = readForApply(ctx, c, conflictReader, child, name, &lock, err); err != nil {
					return applyFailed(released, name, err)
				}
				continue
			}
		}
		return applyFailed(released, name, fmt.Errorf("ownership: applying %s: %w", name, err))
	}
}

// applyFailed is the result and error of an apply that failed with err,
// after released, the patch that took the child over ("" for none).
func applyFailed(released, name string, err error) (controllerutil.OperationResult, error) {
	if released != "" {
		return controllerutil.OperationResultUpdated, fmt.Errorf("ownership: %s, but applying it failed: %w", released, err)
	}
	return controllerutil.OperationResultNone, err
}

// applyConfiguration is what Apply sends: child without status and the
// metadata the API server owns, with owner's controller reference and
// child's other non-controller references.
func applyConfiguration(c client.Client, owner, child client.Object) (*unstructured.Unstructured, error) {
	name := object.Describe(child, c.Scheme())
	if err := object.NormalizeJSON(child); err != nil {
		return nil, fmt.Errorf("ownership: %s: %w", name, err)
	}
	m, err := object.ToMapWithoutManagedFields(child)
	if err != nil {
		return nil, fmt.Errorf("ownership: %w", err)
	}
	u := &unstructured.Unstructured{Object: m}
	delete(u.Object, "status")
	for _, f := range append(serverMetadata, "ownerReferences") {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	ref, k, err := reference(owner, c.Scheme(), true)
	if err != nil {
		return nil, err
	}
	refs := []metav1.OwnerReference{ref}
	for _, r := range child.GetOwnerReferences() {
		if r.UID != ref.UID && (r.Controller == nil || !*r.Controller) {
			refs = append(refs, r) // the caller's other owners (SetOwnerReference)
		}
	}
	u.SetOwnerReferences(refs)
	// The record in the form it is written for a new child, and not the
	// other (a child as an earlier Apply answered it may carry it).
	writeRecord(u, k.record(ref.Name, owner.GetNamespace()))
	return u, nil
}

// readForApply reads the child into a new object of its type (typed: from
// a manager's cache), or nil when there is none. A child c does not show
// is read through apiReader when given. With stale, the lock of an apply
// that answered a conflict, it reads again: through apiReader when given,
// else through c until it shows a child other than the lock's (backing
// off; conflict, the apply's error, when it does not).
func readForApply(ctx context.Context, c client.Client, apiReader client.Reader, child client.Object, name string, stale *memo, conflict error) (client.Object, error) {
	key := client.ObjectKeyFromObject(child)
	get := func(r client.Reader) (client.Object, error) {
		live := object.EmptyLike(child)
		if err := r.Get(ctx, key, live); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, fmt.Errorf("ownership: reading %s: %w", name, err)
		}
		return live, nil
	}
	if apiReader != nil && stale != nil {
		if live, err := get(apiReader); !refused(apiReader, err) {
			return live, err
		}
		// For's API reader may not get this kind: the client, as without it.
	}
	live, err := get(c)
	if err != nil || stale == nil {
		if err == nil && live == nil && apiReader != nil {
			return get(apiReader)
		}
		return live, err
	}
	// The lock failed: the child exists, and not as the lock had it (a
	// child that is gone takes any lock as a create).
	newer := func(live client.Object) bool {
		return live != nil && (live.GetUID() != stale.uid || live.GetResourceVersion() != stale.rv)
	}
	for _, d := range staleReadBackoff {
		if newer(live) {
			return live, nil
		}
		if err := backoff.Sleep(ctx, d); err != nil {
			return nil, fmt.Errorf("ownership: reading %s again: %w", name, err)
		}
		if live, err = get(c); err != nil {
			return nil, err
		}
	}
	if newer(live) {
		return live, nil
	}
	return nil, fmt.Errorf("ownership: applying %s: it changed since it was read, and the client did not show it in %d reads (ownership.WithAPIReader reads it from the API server): %w",
		name, len(staleReadBackoff)+1, conflict)
}

// staleLock reports whether err is the conflict of an apply whose
// resourceVersion is no longer the child's (not a conflict with another
// field manager).
func staleLock(err error) bool {
	if !apierrors.IsConflict(err) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if d := status.Status().Details; d != nil {
			for _, c := range d.Causes {
				if c.Type == metav1.CauseTypeFieldManagerConflict {
					return false
				}
			}
		}
	}
	return true
}

// applyResult says what the API server did with an apply locked on lock
// that succeeded.
func applyResult(lock memo, answer *unstructured.Unstructured, released bool) controllerutil.OperationResult {
	switch {
	case lock.rv == createOnly || answer.GetUID() != lock.uid:
		// Only a create takes a lock that is not the child's.
		return controllerutil.OperationResultCreated
	case released || answer.GetResourceVersion() != lock.rv:
		return controllerutil.OperationResultUpdated
	default:
		return controllerutil.OperationResultNone
	}
}

func resultAfterRelease(released string) controllerutil.OperationResult {
	if released != "" {
		return controllerutil.OperationResultUpdated
	}
	return controllerutil.OperationResultNone
}

// release drops the controller reference with the given UID ("": none)
// from live and records r's owner on it, in r's form and not the other,
// under optimistic locking, so that another owner's reference or record
// is only replaced by an explicit adoption (or a stale reference of the
// owner's own, by a restore). live receives the answer.
func release(ctx context.Context, c client.Client, live client.Object, uid types.UID, r ownerRecord) error {
	before := live.DeepCopyObject().(client.Object)
	var kept []metav1.OwnerReference
	for _, ref := range live.GetOwnerReferences() {
		if ref.UID != uid {
			kept = append(kept, ref)
		}
	}
	live.SetOwnerReferences(kept)
	setRecord(live, r)
	if err := c.Patch(ctx, live, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("ownership: adopting %s: %w", object.Describe(live, c.Scheme()), err)
	}
	return nil
}

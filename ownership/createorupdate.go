package ownership

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/object"
	"github.com/steadyk8s/steady/internal/scope"
)

// CreateOrUpdate reads child (by its namespace and name), runs mutate on it,
// makes owner its controller (with [RecordOwner], recording owner in
// [OwnerKindLabel] and [OwnerNameLabel], or the annotation: see
// docs/ownership.md in the repository, Backup and restore, for the record
// and the children it takes and refuses, and [Adopt]; the record is judged
// and kept as the live child has it, whatever mutate drops or sets there,
// and a new child is judged without one: a mutate that copies its owner's
// labels copies the owner's record of its own owner), and creates it, or
// updates it when it differs from the live object. It reports what it did: created, updated or
// unchanged; on an error, an empty result (never unchanged).
//
// The mutated child is compared with the live object exactly, so a removal
// (a dropped label, a bool set to false, an emptied list) is a change: first
// field for field on the Go values (no JSON work when nothing changed, the
// common reconcile), then, when they differ there, as JSON maps (a nil and an
// empty list are the same to the API server), the metadata the API server
// owns (resourceVersion, managedFields, uid, generation, creationTimestamp,
// deletionTimestamp...) left out, and absent and empty labels, annotations,
// owner references and finalizers the same. Typed and unstructured children
// behave the same; the comparison never changes the caller's object. When
// they differ, the update
// is sent; it carries the resourceVersion read, so the API server either
// refuses it (a conflict) or applies it, and an update whose only difference
// is fields the API server defaults (a wholesale deploy.Spec = desired drops
// them) changes nothing there: the answer keeps the resourceVersion read, no
// watch event fires, and the result is unchanged. That costs no request
// when nothing differs (a cache read through a manager's client) and one,
// the update, when something does. The verdict "only defaults differ" is
// remembered for the child's UID and resourceVersion and a digest of the
// desired object: a converged child nobody changed costs no request on
// later calls (the memory of c, where steady.NewClient made it, or of the
// reconcile.For the call runs in, kept until the informer shows the child
// deleted: see docs/ownership.md).
//
// CreateOrUpdate does not write status: the API server ignores the status
// of an update for kinds with a status subresource (a child's status is
// its own controller's to write). Status set by mutate is therefore not
// compared for such a kind, and costs no request, once the kind is known
// to have one (the first update that shows the server keeping the live
// status tells, once per kind and cluster). For kinds without a
// status subresource, status is part of the object and written with it.
//
// The update carries the resourceVersion that was read (put back if mutate
// rebuilt the metadata), so a child changed since (a stale cache, its own
// controller writing its status) is never overwritten: with an API reader
// the conflict reads the child again through it (one GET), runs mutate on
// what it found and decides anew, at most 3 rounds in all; without one,
// the conflict is returned, to requeue on. The API reader is the one c
// carries (steady.NewClient(mgr) carries the manager's), or, for a c of
// its cluster, the one of the reconcile.For whose body makes the call; a
// re-read it is refused (Forbidden: no get on the child's kind) goes to
// the client, as without one. Nothing is read through it on the common
// path.
//
// A cached client may not have seen a child created a moment ago (by this
// call's previous run, say): the create then answers AlreadyExists, and
// CreateOrUpdate reads the child again, through the API reader when there
// is one (one GET), else through the client, backing off until it shows
// the child (about 2.5 seconds at most), runs mutate on what it found
// and goes on as an update; the reference checks apply to it as to any
// child read ([*AlreadyOwnedError]). A child deleted since the read (the
// update answers NotFound, nothing written) is created. mutate runs again
// in both cases, so it may run more than once per call.
//
// An update the API server refuses because it changes an immutable field
// (a Job's template, a Deployment's selector) is an error that names the
// fields and the way out: set such a field in mutate only when the child
// is created.
//
// On success child holds the live object, as written or as read.
func CreateOrUpdate(ctx context.Context, c client.Client, owner, child client.Object, mutate controllerutil.MutateFn, opts ...MutateOption) (controllerutil.OperationResult, error) {
	return result(write(ctx, c, owner, child, mutate, opts))
}

// result is what a call returns: on an error, the result says what was
// written before it (updated, where Apply released another controller's
// reference and the apply then failed), or is empty, never unchanged: the
// call did not find the child as desired.
func result(op controllerutil.OperationResult, err error) (controllerutil.OperationResult, error) {
	if err != nil && op == controllerutil.OperationResultNone {
		return "", err
	}
	return op, err
}

// createChild is CreateOrUpdate's create.
func createChild(ctx context.Context, c client.Client, child client.Object, name fmt.Stringer, key memKey) (controllerutil.OperationResult, error) {
	desired := object.Shallow(child) // the create decodes its answer into child, in new maps and slices
	if err := c.Create(ctx, child); err != nil {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: creating %s: %w", name, err)
	}
	rememberCreated(key, desired, child)
	return controllerutil.OperationResultCreated, nil
}

// rememberCreated remembers, of child just created (or updated) from
// desired (child holds the API server's answer), that what differs between
// the two is what the server filled in (defaults, a webhook's additions):
// the next call that wants the same writes nothing, where it would
// otherwise send an update that stores nothing to learn it (see
// updateChild). desired may be a shallow copy of what was asked for: its
// server metadata is set from the answer. Where the answer is desired and
// nothing more (a ConfigMap: the server filled nothing in), that is all it
// costs, a typed comparison and a mark that this process wrote the child
// (see writeCall.ownWriteUnseen); else two conversions and a digest. key
// is the child's among the verdicts (one not ok remembers nothing).
func rememberCreated(key memKey, desired, child client.Object) {
	if !key.ok() {
		return
	}
	if filledNothing(desired, child) {
		rememberWritten(key, child)
		return
	}
	m, err := object.ToMapWithoutManagedFields(desired)
	if err != nil {
		return
	}
	rememberKept(key, withoutStatus(withoutServerMetadata(m)), child)
}

// filledNothing reports whether answer, the API server's answer to a write
// of desired (which it may change: its server metadata is set from
// answer), is desired and nothing more.
func filledNothing(desired, answer client.Object) bool {
	keepServerMetadata(desired, answer)
	return object.Equal(desired, answer)
}

// rememberKept remembers the verdict "only defaults differ" between
// want (a map without the status and the server's metadata) and answer,
// the server's answer to its create or update, where answer keeps every
// value want sets (see [keeps]).
func rememberKept(key memKey, want map[string]any, answer client.Object) {
	a, err := object.ToMapWithoutManagedFields(answer)
	if err != nil || !keeps(want, a) {
		return
	}
	if s, err := sum(want); err == nil {
		rememberOnlyDefaults(key, answer, s)
	}
}

// mutateOptions are opts applied. Without any, the common call, nothing
// is allocated: the options an option's method is handed escape.
func mutateOptions(opts []MutateOption) MutateOptions {
	if len(opts) == 0 {
		return MutateOptions{}
	}
	o := &MutateOptions{}
	for _, opt := range opts {
		opt.ApplyToMutate(o)
	}
	return *o
}

// updateChild is CreateOrUpdate's write of an existing child: compare,
// then update. The child's scope (owner's reference to it: see
// validateScope) is checked before the update, not before a remembered
// verdict that there is nothing to write.
func updateChild(ctx context.Context, c client.Client, owner, live, child client.Object, name fmt.Stringer) (controllerutil.OperationResult, error) {
	gvk, gvkErr := object.GVK(child, c.Scheme())
	// The update of a kind with a status subresource cannot write status:
	// a difference there is not compared, nor paid for with an update.
	compared := func(m map[string]any) map[string]any { return m }
	hasStatusSubresource, _ := scope.Of(ctx, c).Learned(gvk, factStatus) // known to have one in c's cluster
	if hasStatusSubresource && gvkErr == nil {
		compared = withoutStatus
	}
	// The objects as maps, converted when needed: the desired one from
	// desired (child as mutated, or a shallow copy of it once child holds
	// the answer).
	var wantMap, liveMap map[string]any
	desired := child
	maps := func() error {
		var err error
		if wantMap == nil {
			if wantMap, err = object.ToMapWithoutManagedFields(desired); err != nil {
				return fmt.Errorf("ownership: %s: %w", name, err)
			}
			wantMap = withoutServerMetadata(wantMap)
		}
		if liveMap == nil {
			if liveMap, err = object.ToMapWithoutManagedFields(live); err != nil {
				return fmt.Errorf("ownership: %s: %w", name, err)
			}
			liveMap = withoutServerMetadata(liveMap)
		}
		return nil
	}
	// An update of this desired object on this live child found only
	// defaults to differ before, or the child was created or updated from
	// it: not sent again (the converged child of a wholesale mutate, every
	// reconcile, also while the child's own controller writes its status;
	// see memo.holds). The digest of the desired object is taken only when
	// a verdict on this live child is remembered, or one is to be
	// remembered.
	var key memKey
	// The verdict remembered for the child, where it still holds for live
	// (its sum is that of the desired object a write found only defaults
	// to differ from).
	var verdict memo
	remembered := false
	if gvkErr == nil {
		key = childKey(ctx, c, gvk, child, updateVerdicts)
		verdict, remembered = recall(key)
		remembered = remembered && verdict.holds(live)
	}
	if remembered {
		if err := maps(); err != nil {
			return controllerutil.OperationResultNone, err
		}
		// The verdict is on what an update writes besides the status; the
		// status too where the kind may have no status subresource (and a
		// status write bumps the generation: the verdict then holds at the
		// resourceVersion alone).
		// A verdict of an update that carried this desired status and
		// stored nothing holds whatever the live status: an update cannot
		// write it (the kind has a status subresource not learned yet:
		// a custom resource without a Go type, say).
		if sum, err := sum(withoutStatus(wantMap)); err == nil && sum == verdict.sum &&
			(hasStatusSubresource || equalStatus(liveMap["status"], wantMap["status"]) ||
				verdict.statusSent && sumIs(verdict.status, wantMap["status"])) {
			object.Copy(child, live)
			return controllerutil.OperationResultNone, nil
		}
	}
	// A difference in the labels, annotations, finalizers or owner
	// references (a repair of drift, the common update) is a difference
	// in JSON too: no conversion is needed to tell. Else the maps tell.
	if remembered || !metadataDiffers(live, child) {
		if err := maps(); err != nil {
			return controllerutil.OperationResultNone, err
		}
		if sameObject(compared(liveMap), compared(wantMap)) {
			object.Copy(child, live) // show the live state
			return controllerutil.OperationResultNone, nil
		}
	}
	if err := validateScope(ctx, c, owner, child); err != nil {
		return controllerutil.OperationResultNone, err
	}
	others, ours := otherSets(live, child)
	var named []string
	if len(others) > 0 {
		if err := maps(); err == nil {
			named = warnOthersRemoved(ctx, name, others, liveMap, wantMap)
		}
	}
	if wantMap == nil {
		// The update decodes its answer into child, in new maps and
		// slices: a shallow copy keeps the desired object.
		desired = object.Shallow(child)
	}
	// The update carries the resourceVersion read: it is refused, or
	// applied to the live object as read. One whose difference is only
	// fields the API server defaults changes nothing there and keeps that
	// resourceVersion (no write to etcd, no watch event).
	// Sent without its managedFields: the API server keeps the live
	// object's when an update has none (they are the larger part of a
	// child's metadata, and only the server writes them).
	managed := child.GetManagedFields()
	child.SetManagedFields(nil)
	if err := c.Update(ctx, child); err != nil {
		if len(child.GetManagedFields()) == 0 {
			child.SetManagedFields(managed)
		}
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: updating %s: %w", name, immutable(err))
	}
	if _, untyped := live.(*unstructured.Unstructured); len(others) > 0 && !untyped {
		// A typed child shows only what its Go type holds: what the update
		// removed of others' that the type could not show, the answer's
		// field sets tell.
		warnOthersLost(ctx, name, others, ours, liveMap, child, named)
	}
	// What the answer tells of the kind's status subresource; nothing when
	// neither object has a status (a ConfigMap): the answer is not
	// converted then.
	if gvkErr == nil && hasStatus(live) { // live and desired are of one Go type
		if err := maps(); err == nil && (liveMap["status"] != nil || wantMap["status"] != nil) {
			if answer, err := object.ToMapWithoutManagedFields(child); err == nil {
				learnStatusSubresource(ctx, c, gvk, liveMap, wantMap, answer)
			}
		}
	}
	if child.GetResourceVersion() == live.GetResourceVersion() {
		if err := maps(); err == nil && gvkErr == nil {
			if s, err := sum(withoutStatus(wantMap)); err == nil {
				if status, err := sum(wantMap["status"]); err == nil && !hasStatusSubresource {
					rememberStatusSent(key, live, s, status)
				} else {
					rememberOnlyDefaults(key, live, s)
				}
			}
		}
		return controllerutil.OperationResultNone, nil // only the server's defaults differed
	}
	// The answer is what was asked for and what the server filled in: as
	// after a create, the next call that wants the same writes nothing.
	if gvkErr == nil {
		if wantMap == nil {
			rememberCreated(key, desired, child)
		} else {
			rememberKept(key, withoutStatus(wantMap), child)
		}
	}
	return controllerutil.OperationResultUpdated, nil
}

// metadataDiffers reports whether a and b differ in their labels,
// annotations, finalizers or owner references, nil and empty alike: a
// difference their JSON, as compared, has too.
func metadataDiffers(a, b client.Object) bool {
	return !equality.Semantic.DeepEqual(a.GetLabels(), b.GetLabels()) ||
		!equality.Semantic.DeepEqual(a.GetAnnotations(), b.GetAnnotations()) ||
		!equality.Semantic.DeepEqual(a.GetFinalizers(), b.GetFinalizers()) ||
		!equality.Semantic.DeepEqual(a.GetOwnerReferences(), b.GetOwnerReferences())
}

// hasStatus reports whether obj may hold a status: an unstructured object,
// or a Go struct with a field whose JSON name is "status" (a struct
// embedded inline may hold it: see object.JSONField).
func hasStatus(obj client.Object) bool {
	t := reflect.TypeOf(obj)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return true
	}
	if v, ok := statusFields.Load(t); ok {
		return v.(bool)
	}
	_, has := object.JSONField(t.Elem(), "status")
	statusFields.Store(t, has)
	return has
}

// statusFields caches hasStatus per Go type.
var statusFields sync.Map // reflect.Type -> bool: a fact of the Go type, the same for every client

// sumIs reports whether status sums to s.
func sumIs(s [32]byte, status any) bool {
	got, err := sum(status)
	return err == nil && got == s
}

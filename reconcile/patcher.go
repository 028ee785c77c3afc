package reconcile

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/cachewait"
	"github.com/steadyk8s/steady/internal/object"
	"github.com/steadyk8s/steady/internal/observe"
	"github.com/steadyk8s/steady/internal/patch"
	"github.com/steadyk8s/steady/internal/scope"
)

// Patcher writes the changes a reconcile made to an object, and only those.
// Take it with [NewPatcher] right after reading the object, change the object
// freely, and call [Patcher.Patch], usually in a defer with
// [Patcher.PatchOnExit]. After each successful Patch the Patcher takes the
// written object as its new snapshot, so it can be used again: write
// Reconciling early, and the rest at the end.
type Patcher struct {
	w patch.Writer
	// held says that w.State is the one the client carries (see
	// steady.NewClient); else each Patch takes the one of its context.
	held   bool
	api    client.Reader // the API reader of the client's State, nil without
	cache  client.Reader // the client, which WithCacheWait waits on
	scheme *runtime.Scheme
	before client.Object
}

// NewPatcher snapshots obj, which should be as read from the API server,
// for writes through c. Give it steady.NewClient(mgr): it knows this
// process's own writes (see [StaleError]) and carries the manager's API
// reader, through which Patch re-reads the object after a conflict. Given
// a client that carries no API reader (a manager's GetClient() itself), a
// re-read that still shows the conflicting state (a lagging cache) is
// repeated with backoff instead.
func NewPatcher(c client.Client, obj client.Object) (*Patcher, error) {
	return newPatcher(c, obj, false)
}

// newPatcher is NewPatcher; own says that obj is the caller's own (For's,
// which it read into and no one else holds), whose managedFields the
// snapshot may share (see snapshotOwn).
func newPatcher(c client.Client, obj client.Object, own bool) (*Patcher, error) {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return nil, errors.New("reconcile: NewPatcher needs an object")
	}
	gvk, err := object.GVK(obj, c.Scheme())
	if err != nil {
		return nil, fmt.Errorf("reconcile: NewPatcher: %w", err)
	}
	// The client's State (steady.NewClient) records this process's writes
	// and gives its API reader.
	st := scope.Held(c)
	api := st.APIReader()
	if err := object.NormalizeJSON(obj); err != nil {
		return nil, fmt.Errorf("reconcile: NewPatcher: %w", err)
	}
	var before client.Object
	if own {
		before = snapshotOwn(obj)
	} else {
		before = obj.DeepCopyObject().(client.Object)
	}
	return &Patcher{
		w: patch.Writer{Client: observe.Client(c, "reconcile"), Reader: observe.Reader(api, "reconcile"),
			State: st, Key: scope.Key{GVK: gvk, Namespace: obj.GetNamespace(), Name: obj.GetName()}},
		held:   st != nil,
		api:    api,
		cache:  c,
		scheme: c.Scheme(),
		before: before,
	}, nil
}

// snapshotOwn is a deep copy of obj, a typed object no one else holds,
// that shares obj's managedFields: no write sends them and Patch only
// reads its snapshot, so the entries (often the larger part of an
// object's metadata) are not copied on every reconcile. An unstructured
// object, whose managedFields are maps inside it, is copied whole.
func snapshotOwn(obj client.Object) client.Object {
	if _, ok := obj.(*unstructured.Unstructured); ok {
		return obj.DeepCopyObject().(client.Object)
	}
	managed := obj.GetManagedFields()
	obj.SetManagedFields(nil)
	c := obj.DeepCopyObject().(client.Object)
	obj.SetManagedFields(managed)
	c.SetManagedFields(managed)
	return c
}

// mismatchError is returned by [Patcher.Patch] when the object passed is not
// the one snapshotted: another kind, Go type, namespace or name. A patch
// computed across two objects would delete fields of the target.
type mismatchError struct {
	// Snapshot names the snapshotted object ("Kind namespace/name", with
	// its Go type).
	Snapshot string
	// Object names the object passed to Patch.
	Object string
}

// Error implements error.
func (e *mismatchError) Error() string {
	return fmt.Sprintf("reconcile: Patch of %s with a Patcher of %s: not the same object", e.Object, e.Snapshot)
}

// PatchError is the failure of a write of [Patcher.Patch]. Written says
// what had been written before it (status goes first); the rest was not.
type PatchError struct {
	// Object names the object as "Kind namespace/name".
	Object string
	// Step is the write that failed: "status" or "metadata and spec"
	// ("status, metadata and spec" for a kind without a status
	// subresource, where they go in one write).
	Step string
	// Written lists the writes that succeeded before; empty: nothing was
	// written before Step.
	Written []string
	// Unsure is set when Step's write may itself have been applied: its
	// error did not come from the API server (a timeout, a dropped
	// connection). Read the object to know.
	Unsure bool
	// Err is the API server's (or the client's) error.
	Err error
}

// Error implements error.
func (e *PatchError) Error() string {
	return fmt.Sprintf("reconcile: %s: writing %s failed (%s): %v", e.Object, e.Step, patch.Written(e.Written, e.Unsure), e.Err)
}

// Unwrap returns the underlying error.
func (e *PatchError) Unwrap() error { return e.Err }

// StaleError is returned by [Patcher.Patch] when what the reconcile
// computed is older than the live object, so that writing it would write
// the past:
//
//   - the snapshot is older than this process's own last write of the
//     object through the same steady client (steady.NewClient's, or For's;
//     a client that carries none knows no writes), read from a cache that
//     does not hold that write yet: nothing
//     is written, since a change judged against that snapshot may be none
//     where the live object needs one;
//   - the status was computed from an older generation than the live one
//     and says which generation it observed (status.observedGeneration, or
//     an observedGeneration on a condition), or one of its conditions is
//     older than the live one: the status is not written; the rest of the
//     change (metadata, spec) is, as Written says.
//
// Read the object again and reconcile anew: [For] does, by requeueing
// after 100 milliseconds without an error.
type StaleError struct {
	// Object names the object as "Kind namespace/name".
	Object string
	// Reason says what is older than what.
	Reason string
	// Written lists the writes that were made (empty: none).
	Written []string
}

// Error implements error.
func (e *StaleError) Error() string {
	what := "nothing was written"
	if len(e.Written) > 0 {
		what = "only " + strings.Join(e.Written, " and ") + " was written"
	}
	return fmt.Sprintf("reconcile: %s: %s: %s; read it again and reconcile anew", e.Object, e.Reason, what)
}

// PatchOnExit calls [Patcher.Patch] and joins its error into *reterr, for a
// deferred call at the top of Reconcile, with named results:
//
//	func (r *R) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
//		...
//		p, err := reconcile.NewPatcher(r.Client, obj) // r.Client: steady.NewClient(mgr)
//		...
//		defer p.PatchOnExit(ctx, obj, &res, &reterr)
//
// With res, what [For] does not count as a failure is not one here either:
// a *StaleError alone (the reconcile computed from a copy older than the
// live object or than this process's own write: nothing was written) or a
// cachewait timeout alone leaves *reterr nil and sets res.RequeueAfter (to
// at most 100 milliseconds or 1 second). controller-runtime then requeues
// quietly instead of logging "Reconciler error" and backing off. Any other
// error, or one the reconcile returns itself, is joined into *reterr. With
// a nil res every error of Patch is joined into *reterr. After a reconcile
// that returned an error, [WithObservedGeneration] is not applied, as in
// [For].
func (p *Patcher) PatchOnExit(ctx context.Context, obj client.Object, res *ctrl.Result, reterr *error, opts ...PatchOption) {
	if *reterr != nil {
		// A failed reconcile did not observe the generation (as in For).
		opts = append(slices.Clip(opts), withoutObservedGeneration{})
	}
	err := p.Patch(ctx, obj, opts...)
	if err == nil {
		return
	}
	if *reterr == nil && res != nil {
		if d, ok := notFailed(ctx, err); ok {
			*res = requeueWithin(*res, d)
			return
		}
	}
	*reterr = errors.Join(*reterr, err)
}

// Patch writes what changed in obj since the snapshot:
//
//   - nothing changed: no request at all;
//   - status changed: one PATCH of the status subresource carrying all of
//     status (conditions, observedGeneration and the rest) at once;
//   - metadata or spec changed: one merge PATCH of the difference; both:
//     two PATCHes, status first.
//
// The difference is taken on the JSON of the objects: a removed label, a
// bool set to false, a number set to 0, an emptied list or map, a removed
// condition are all written; an empty object that exists only because its
// parent struct is not omitted ({"spec":{"topology":{}}} where there was
// no topology) is not.
//
// Lists a merge patch replaces whole and other writers change too, the
// finalizers, the ownerReferences (by uid) and the conditions (by type; also
// those of [WithConditionLists]), are rebased on the latest object before
// each write and sent under optimistic locking: the entries this reconcile
// added, changed or removed (and the types of [WithOwnedConditions]) take
// its value, every other entry stays as the latest writer has it, whatever
// its shape (a Deployment's lastUpdateTime, cluster-api's severity), as far
// as obj's Go type reads it: an unstructured object keeps every field, a
// typed one the fields its Go types have (a list is sent whole, so a field
// the condition struct lacks is lost on every entry when the list is
// written). On a conflict Patch reads the object again, through the API
// reader of the Patcher's client when it carries one (steady.NewClient),
// and rebases; a read that still shows the conflicting state (a lagging
// cache) is repeated with backoff. The
// metadata write rebases on the status write's answer.
// [WithOptimisticLock] locks every write and returns the conflict instead.
//
// Every write carries the snapshot's UID as a precondition: an object
// deleted and recreated under the same name is never written, and Patch
// reports that as gone. (The status subresource does not compare a UID, so
// status writes are locked on the resourceVersion read and rebased on a
// conflict like the lists.) Gone (NotFound, or another UID) is success: there
// is nothing left to write. A kind without a status subresource gets its
// status written with the object, in one write with the rest of the change
// (after the status subresource's 404).
//
// obj must be the snapshotted object (same kind, Go type, namespace and
// name), else an error that names both. A finalizer this change adds that is no
// qualified name, and a condition it adds or changes with a type, status,
// reason or message the API server refuses in a metav1.Condition
// ([conditions.Validate]; Set fits reasons and messages), are refused
// before any write: a [*PatchError] with Written empty that wraps an
// error naming the finalizer and metadata.finalizers, or a
// [*conditions.FieldError] naming the field (status.conditions[2].status). A failed write is a [*PatchError] that
// says what was written before it. On success obj holds the API server's
// answer to the last write and becomes the Patcher's new snapshot.
func (p *Patcher) Patch(ctx context.Context, obj client.Object, opts ...PatchOption) error {
	return p.patch(ctx, obj, true, opts)
}

// patch is Patch; resnapshot false takes no new snapshot after a write:
// for the last Patch of a Patcher dropped after it (For's, at the end of a
// reconcile), the deep copy would be read by no one. A caller's own
// Patcher may Patch again, and re-snapshots.
func (p *Patcher) patch(ctx context.Context, obj client.Object, resnapshot bool, opts []PatchOption) error {
	o := PatchOptions{}
	for _, opt := range opts {
		opt.ApplyToPatch(&o)
	}
	if err := object.NormalizeJSON(obj); err != nil { // an unstructured object holding Go ints, say
		return fmt.Errorf("reconcile: %s: %w", p.describe(), err)
	}
	if err := p.sameObject(obj); err != nil {
		return err
	}
	if err := checkPatchOptions(obj, o); err != nil {
		return &PatchError{Object: p.describe(), Step: "the patch", Err: err}
	}
	lists := splitPaths(o.ConditionLists)
	if err := p.checkInput(obj, lists); err != nil {
		return &PatchError{Object: p.describe(), Step: "the patch", Err: err}
	}
	if !p.held {
		p.w.State = scope.Of(ctx, p.w.Client) // reconcile.For's, in its context
	}
	res, err := p.w.Patch(ctx, p.before, obj, patch.Options{
		OptimisticLock:     o.OptimisticLock,
		ObservedGeneration: o.ObservedGeneration,
		GuardGeneration:    o.guardGeneration,
		OwnedConditions:    o.OwnedConditions,
		ConditionLists:     lists,
		CheckOwnWrites:     true,
	})
	if o.Events != nil && res.StatusBase != nil {
		// The flip this Patch made against the state its status write was
		// rebased on, not against a snapshot that may be older.
		if answer, err := object.ToMapWithoutManagedFields(res.StatusAnswer); err == nil {
			recordReadyFlip(o.Events, res.StatusBase, answer, obj)
		}
	}
	if err != nil {
		var se *patch.StepError
		if errors.As(err, &se) {
			return &PatchError{Object: p.describe(), Step: se.Step, Written: se.Wrote, Unsure: se.Unsure, Err: se.Err}
		}
		return &PatchError{Object: p.describe(), Step: "the patch", Err: err}
	}
	if res.Gone {
		return nil
	}
	if len(res.Wrote) > 0 && resnapshot {
		p.before = obj.DeepCopyObject().(client.Object)
	}
	if res.Stale != "" {
		return &StaleError{Object: p.describe(), Reason: res.Stale, Written: res.Wrote}
	}
	if o.CacheWait && len(res.Wrote) > 0 {
		wait := o.CacheWaitOptions
		if p.api != nil {
			// Tell a released object from a lagging cache (the caller's own
			// options still win).
			wait = append([]cachewait.WaitOption{cachewait.WithAPIReader{Reader: p.api}}, wait...)
		}
		if err := cachewait.ForWrite(ctx, p.cache, obj, wait...); err != nil {
			return fmt.Errorf("reconcile: %s: %w", p.describe(), err)
		}
	}
	return nil
}

func (p *Patcher) sameObject(obj client.Object) error {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return &mismatchError{Snapshot: p.describe(), Object: "nil"}
	}
	bg, berr := object.GVK(p.before, p.scheme)
	og, oerr := object.GVK(obj, p.scheme)
	if reflect.TypeOf(obj) != reflect.TypeOf(p.before) || berr != nil || oerr != nil || bg != og ||
		obj.GetNamespace() != p.before.GetNamespace() || obj.GetName() != p.before.GetName() {
		return &mismatchError{
			Snapshot: fmt.Sprintf("%s (%T)", p.describe(), p.before),
			Object:   fmt.Sprintf("%s (%T)", object.Describe(obj, p.scheme), obj),
		}
	}
	return nil
}

func (p *Patcher) describe() string { return object.Describe(p.before, p.scheme) }

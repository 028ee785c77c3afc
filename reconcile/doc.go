// Package reconcile writes what a reconcile changed, and only that, in a
// deferred call: the patch-helper-in-defer pattern of cluster-api's
// util/patch, on plain controller-runtime.
//
// Take a [Patcher] right after reading the object, change the object as the
// reconcile goes, and let the defer write:
//
//	func (r *BucketReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
//		bucket := &v1.Bucket{}
//		if err := r.Get(ctx, req.NamespacedName, bucket); err != nil {
//			return ctrl.Result{}, client.IgnoreNotFound(err)
//		}
//		p, err := reconcile.NewPatcher(r.Client, bucket) // r.Client: steady.NewClient(mgr)
//		if err != nil {
//			return ctrl.Result{}, err
//		}
//		defer p.PatchOnExit(ctx, bucket, &res, &reterr, reconcile.WithObservedGeneration{})
//
//		conditions.MarkTrue(bucket, "BucketReady", "Created", "")
//		return ctrl.Result{}, nil
//	}
//
// What [Patcher.Patch] guarantees:
//
//   - no request when nothing changed, so marking every condition on every
//     reconcile is free; the difference is taken on the JSON of the objects,
//     and an empty object that only exists because a parent struct is not
//     omitted is no change;
//   - every change is written, removals too: a dropped label, a bool set to
//     false, a number set to 0, an emptied list or map, a removed condition,
//     on typed and unstructured objects;
//   - status in one write to the status subresource (conditions,
//     observedGeneration and the rest together), metadata and spec in one
//     merge patch: 1 PATCH for either, 2 for both, status first;
//   - other writers' changes survive: fields this reconcile did not touch are
//     not in the patch, and the lists a merge patch replaces whole,
//     finalizers, ownerReferences and conditions (of any shape: entries are
//     kept as the JSON the latest writer wrote, as far as the object's Go
//     type reads it; unstructured objects keep every field), are rebased on the latest
//     object and written under optimistic locking; on a conflict Patch
//     re-reads and rebases (the entries this reconcile changed win);
//   - re-reads go to the API reader the client carries (steady.NewClient(mgr)
//     carries the manager's); without one, a read that still shows the
//     conflicting state (a lagging cache) is repeated with backoff, so a
//     reconcile right after this controller's own write converges either
//     way;
//   - a deleted and recreated object (another UID) is never written: every
//     write carries the UID as a precondition;
//   - an object that is gone (deleted meanwhile, or released by its last
//     finalizer) is success, not an error; a failed write is a
//     [*PatchError] saying what was written before it; an object other than
//     the snapshotted one is refused with an error naming both; a finalizer
//     name or a condition the API server would refuse is refused before
//     any write (a [*PatchError] wrapping an error that names the field);
//   - a kind without a status subresource gets its status written with the
//     object, in one write with the rest of the change, and [WithObservedGeneration] then records the generation that
//     write produces, so repeated reconciles make no write;
//   - after a successful Patch the object is the Patcher's new snapshot: a
//     Patcher can write Reconciling early and the rest at the end.
//
// [For] wraps the whole routine (read, finalizers, patch, Ready summary) into
// a controller-runtime Reconciler for one typed object; it is sugar over the
// Patcher, not a framework. What is not a failure is not returned as one: a
// cache wait that timed out is a requeue, an object gone is done.
//
// Options follow one style: each is a small exported type implementing
// ApplyToPatch or ApplyToFor (every PatchOption is also a ForOption).
package reconcile

// Package reconcile writes what a reconcile changed, and only that, in a
// deferred call: the patch-helper-in-defer pattern of cluster-api's
// util/patch, on plain controller-runtime.
//
// Take a [Patcher] right after reading the object, change the object as the
// reconcile goes, and let the defer write:
//
//	func (r *BucketReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
//		bucket := &v1.Bucket{}
//		if err := r.Get(ctx, req.NamespacedName, bucket); err != nil {
//			return ctrl.Result{}, client.IgnoreNotFound(err)
//		}
//		p, err := reconcile.NewPatcher(r.Client, bucket)
//		if err != nil {
//			return ctrl.Result{}, err
//		}
//		defer p.PatchOnExit(ctx, bucket, &reterr, reconcile.WithObservedGeneration{})
//
//		conditions.MarkTrue(bucket, "BucketReady", "Created", "")
//		return ctrl.Result{}, nil
//	}
//
// What [Patcher.Patch] guarantees:
//
//   - no request when nothing changed, so marking every condition on every
//     reconcile is free;
//   - status in one write to the status subresource: conditions,
//     observedGeneration and the rest land together, so no watcher sees Ready
//     beside a stale payload; metadata and spec in one merge patch of the
//     difference;
//   - other writers' changes survive: fields this reconcile did not touch are
//     not in the patch, and the two lists a merge patch would replace whole,
//     conditions and finalizers, are written under optimistic locking and
//     rebased on a conflict (the conditions this reconcile changed win);
//   - an object that is gone (deleted meanwhile, or released by its last
//     finalizer) is success, not an error.
//
// [For] wraps the whole routine (read, finalizers, patch, Ready summary) into
// a controller-runtime Reconciler for one typed object; it is sugar over the
// Patcher, not a framework.
package reconcile

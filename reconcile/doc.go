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
// [Patcher.Patch] writes what changed since the snapshot and only that: no
// request when nothing changed (marking every condition on every reconcile
// is free), every change including removals, status in one write to the
// status subresource and metadata and spec in one merge patch. Other
// writers' changes survive: finalizers, owner references and conditions
// are rebased on the latest object and written under optimistic locking,
// and a conflict is re-read and rebased, through the API reader that
// steady.NewClient(mgr) carries. An object gone meanwhile is success; a
// failed write is a [*PatchError] saying what was written before it.
//
// [For] wraps the whole routine (read, finalizers, patch, Ready summary) into
// a controller-runtime Reconciler for one typed object; it is sugar over the
// Patcher, not a framework. [NewController] wires For, owned kinds, indexes
// and watches on a manager.
//
// The guide, docs/reconcile.md in the repository, covers what Patch
// guarantees and where it stops (typed condition fields, lists without
// keys), the options, and what a reconcile costs.
package reconcile

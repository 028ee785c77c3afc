// Package finalizer adds and removes finalizers and runs the cleanup of
// external state when an object is deleted, in the order that never leaks
// and never blocks deletion for ever.
//
// To add, remove or look for a finalizer on an object in memory, use
// controller-runtime's controllerutil.AddFinalizer, RemoveFinalizer and
// ContainsFinalizer; they report whether they changed the object.
//
// A [Handler] runs the classic flow for any number of named finalizers, each
// with its own cleanup:
//
//	h := finalizer.NewHandler(steady.NewClient(mgr))
//	_ = h.Register("buckets.example.com/cleanup", finalizer.Func(deleteBucket))
//
//	func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
//		...
//		res, err := r.finalizers.Handle(ctx, obj)
//		if err != nil || res.Deleting {
//			return ctrl.Result{RequeueAfter: res.RequeueAfter}, err // cleanup failed: retried with backoff
//		}
//		// Every finalizer is persisted: now it is safe to create external state.
//	}
//
// While the object lives, Handle persists missing finalizers before it
// returns, so nothing external is created that a deletion could miss. Once
// the object is being deleted, Handle runs each present finalizer's cleanup
// and removes only the finalizers whose cleanup succeeded; a failed cleanup
// keeps its finalizer and its error is returned, so the request is retried.
// A cleanup may change the object to report progress (a condition, "deleting
// 3 of 5"): Handle writes that change whether the cleanup succeeded, failed
// or returned [InProgress] (keep the finalizer, requeue, no error).
//
// Writes go through the same engine as reconcile.Patcher: the finalizer
// list is rebased on the latest object and locked, so another controller's
// finalizers are never dropped and nothing they removed comes back; a
// conflict re-reads the object (through the API reader the client carries,
// steady.NewClient's, else with backoff until a lagging cache catches up);
// every write carries the object's UID, so an object deleted and recreated
// under the same name is never touched. An object that is gone is
// Result.Gone, not an error.
package finalizer

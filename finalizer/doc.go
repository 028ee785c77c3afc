// Package finalizer adds and removes finalizers and runs the cleanup of
// external state when an object is deleted, in the order that never leaks
// and never blocks deletion for ever.
//
// The mutators [Ensure], [Remove] and [Has] work on an object in memory and
// report whether they changed it; [Ensure] refuses, with a [*DeletingError]
// and no API call, to add a finalizer to an object that is already being
// deleted (the API server would reject it).
//
// A [Handler] runs the classic flow for any number of named finalizers, each
// with its own cleanup:
//
//	h := finalizer.NewHandler(mgr.GetClient())
//	_ = h.Register("buckets.example.com/cleanup", finalizer.Func(deleteBucket))
//
//	func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
//		...
//		res, err := r.finalizers.Handle(ctx, obj)
//		if err != nil || res.Deleting {
//			return ctrl.Result{}, err // cleanup failed: retried with backoff
//		}
//		// Every finalizer is persisted: now it is safe to create external state.
//	}
//
// While the object lives, Handle persists missing finalizers before it
// returns, so nothing external is created that a deletion could miss. Once
// the object is being deleted, Handle runs each present finalizer's cleanup
// and removes only the finalizers whose cleanup succeeded; a failed cleanup
// keeps its finalizer and its error is returned, so the request is retried.
//
// Finalizer writes are merge patches under optimistic locking: when another
// controller changed the object meanwhile (adding a finalizer of its own,
// say), Handle reads it again and reapplies only its own change, so it never
// drops someone else's finalizer.
package finalizer

package finalizer

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Func cleans up what an object owns outside the API server. It must be
// idempotent: it runs again when an earlier run failed, or succeeded but
// the finalizer's removal did not reach the API server. It may change obj
// (status, conditions: "deleting 3 of 5 objects"): [Handler.Handle] writes
// those changes, whether the cleanup succeeded, failed or returned
// [InProgress]. It must not remove its own finalizer; Handle does.
type Func func(ctx context.Context, obj client.Object) error

// Result says what [Handler.Handle] did.
type Result struct {
	// Deleting is true when the object is being deleted: Handle ran the
	// cleanups, and the caller should not reconcile it further.
	Deleting bool
	// Updated is true when a write of Handle landed (its finalizers, or what
	// a cleanup changed); obj then holds the API server's answer. It is
	// false when the write found the object gone.
	Updated bool
	// Gone is true when the object no longer exists (deleted, or replaced by
	// another object of the same name): there is nothing left to do. Gone
	// implies Deleting, so that callers stop.
	Gone bool
	// RequeueAfter is set when a cleanup is in progress ([InProgress]): look
	// again then (the shortest of the cleanups' times; never zero then).
	RequeueAfter time.Duration
}

// CleanupError is the error of one finalizer's cleanup; [Handler.Handle]
// joins one per failed finalizer.
type CleanupError struct {
	// Object names the object, as kind namespace/name.
	Object string
	// Finalizer is the finalizer whose cleanup failed; it stays on the object.
	Finalizer string
	// Err is the cleanup's error.
	Err error
}

// Error implements error.
func (e *CleanupError) Error() string {
	return fmt.Sprintf("finalizer %s of %s: cleanup failed, keeping the finalizer: %v", e.Finalizer, e.Object, e.Err)
}

// Unwrap returns the underlying error.
func (e *CleanupError) Unwrap() error { return e.Err }

// inProgressError is returned by a cleanup that started but has not
// finished (waiting for children to go, say): [Handler.Handle] keeps the
// finalizer, writes what the cleanup changed on the object (a status line
// "deleting 3 of 5"), returns no error and asks for a requeue after
// RequeueAfter. Make it with [InProgress].
type inProgressError struct {
	// RequeueAfter is when to look again; zero (or less):
	// [defaultInProgressRequeue].
	RequeueAfter time.Duration
	// Message says what is pending.
	Message string
}

// defaultInProgressRequeue is the RequeueAfter of a cleanup in progress
// that gave none: a Result with a zero RequeueAfter and no error is never
// requeued, and the cleanup would not be looked at again.
const defaultInProgressRequeue = 5 * time.Second

// InProgress returns the error a cleanup returns when it started but has
// not finished (waiting for children to go, say): [Handler.Handle] keeps
// the finalizer, writes what the cleanup changed on the object (a status
// line "deleting 3 of 5"), returns no error and asks for a requeue after
// requeueAfter (5 seconds when zero or less). It may be wrapped.
func InProgress(requeueAfter time.Duration, format string, args ...any) error {
	return &inProgressError{RequeueAfter: requeueAfter, Message: fmt.Sprintf(format, args...)}
}

// Error implements error.
func (e *inProgressError) Error() string {
	return fmt.Sprintf("finalizer: cleanup in progress: %s", e.Message)
}

// When limits a finalizer to the objects it selects, for a controller of a
// kind it shares with others (a Service, a Node, a Pod): the finalizer is
// added only to selected objects; an object that carries it but is no
// longer selected (a Service changed from LoadBalancer to ClusterIP) has its
// cleanup run and the finalizer removed once it succeeded. On deletion the
// cleanup runs whatever When says, as long as the finalizer is there.
type When func(client.Object) bool

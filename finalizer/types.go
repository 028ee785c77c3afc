package finalizer

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Finalizer cleans up what an object owns outside the API server. Finalize
// must be idempotent: it runs again when an earlier run failed, or succeeded
// but the finalizer's removal did not reach the API server.
type Finalizer interface {
	Finalize(ctx context.Context, obj client.Object) error
}

// Func adapts a function to [Finalizer].
type Func func(ctx context.Context, obj client.Object) error

// Finalize implements [Finalizer].
func (f Func) Finalize(ctx context.Context, obj client.Object) error { return f(ctx, obj) }

var _ Finalizer = Func(nil)

// Result says what [Handler.Handle] did.
type Result struct {
	// Deleting is true when the object is being deleted: Handle ran the
	// cleanups, and the caller should not reconcile it further.
	Deleting bool
	// Updated is true when Handle wrote the object's finalizers; obj then
	// holds the API server's answer.
	Updated bool
}

// DeletingError is returned by [Ensure] for an object that is being deleted:
// the API server refuses new finalizers then.
type DeletingError struct {
	// Object names the object, as namespace/name.
	Object string
	// Finalizer is the finalizer that was not added.
	Finalizer string
}

// Error implements error.
func (e *DeletingError) Error() string {
	return fmt.Sprintf("finalizer: not adding %s to %s: the object is being deleted", e.Finalizer, e.Object)
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

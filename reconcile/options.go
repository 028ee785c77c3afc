package reconcile

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/cachewait"
)

// PatchOptions configures [Patcher.Patch].
type PatchOptions struct {
	// OptimisticLock locks every write on the resourceVersion read and
	// returns a conflict instead of merging.
	OptimisticLock bool
	// ObservedGeneration sets status.observedGeneration to the object's
	// generation in the same status write.
	ObservedGeneration bool
	// OwnedConditions are condition types this controller owns: on a
	// conflict its values win even where this reconcile did not change them.
	OwnedConditions []string
	// CacheReader, when set, is waited on after a write until it holds the
	// patched object (see cachewait.ForWrite).
	CacheReader client.Reader
	// CacheWaitOptions configure that wait.
	CacheWaitOptions []cachewait.WaitOption
}

// PatchOption configures [Patcher.Patch].
type PatchOption interface {
	ApplyToPatch(*PatchOptions)
}

// WithOptimisticLock makes every write fail with a conflict when the object
// changed since it was read, instead of merging.
type WithOptimisticLock struct{}

// ApplyToPatch implements [PatchOption].
func (WithOptimisticLock) ApplyToPatch(o *PatchOptions) { o.OptimisticLock = true }

// WithObservedGeneration sets status.observedGeneration to
// metadata.generation in the status write, as kstatus expects of a
// reconciled object.
type WithObservedGeneration struct{}

// ApplyToPatch implements [PatchOption].
func (WithObservedGeneration) ApplyToPatch(o *PatchOptions) { o.ObservedGeneration = true }

// WithOwnedConditions lists condition types that this controller alone
// writes: on a conflict its values win.
type WithOwnedConditions []string

// ApplyToPatch implements [PatchOption].
func (w WithOwnedConditions) ApplyToPatch(o *PatchOptions) {
	o.OwnedConditions = append(o.OwnedConditions, w...)
}

// WithCacheWait makes Patch, after it wrote, wait until Reader (the
// manager's cached client) holds the patched object, so that the next
// reconcile reads what this one wrote. A [*cachewait.TimeoutError] is
// returned when it does not in time: requeue, the write itself succeeded.
type WithCacheWait struct {
	Reader  client.Reader
	Options []cachewait.WaitOption
}

// ApplyToPatch implements [PatchOption].
func (w WithCacheWait) ApplyToPatch(o *PatchOptions) {
	o.CacheReader, o.CacheWaitOptions = w.Reader, w.Options
}

var (
	_ PatchOption = WithCacheWait{}
	_ PatchOption = WithOptimisticLock{}
	_ PatchOption = WithObservedGeneration{}
	_ PatchOption = WithOwnedConditions(nil)
)

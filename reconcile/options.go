package reconcile

import (
	"fmt"
	"strings"

	"k8s.io/client-go/tools/record"

	"github.com/steadyk8s/steady/cachewait"
	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/finalizer"
)

// PatchOptions configures [Patcher.Patch]. The zero value is no option.
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
	// ConditionLists are further condition lists, as dotted paths
	// ("status.deprecated.v1beta1.conditions"), merged by type like
	// status.conditions.
	ConditionLists []string
	// CacheWait waits after a write until the Patcher's client (a
	// manager's reads its cache) holds the patched object (see
	// [WithCacheWait]).
	CacheWait bool
	// CacheWaitOptions configure that wait.
	CacheWaitOptions []cachewait.WaitOption
	// Events, when set, records a Kubernetes Event on the object when a
	// write flips its Ready condition (see [WithEvents]).
	Events record.EventRecorder
	// guardGeneration keeps ObservedGeneration's guard (a status computed
	// from a generation older than the live status.observedGeneration is
	// not written) where For turned ObservedGeneration off: after a failed
	// body.
	guardGeneration bool
}

// optionError says that an option cannot work on the object's Go type:
// [For] (and so [NewController]) returns it when it is built, and
// [Patcher.Patch] before any write.
type optionError struct {
	// Type is the object's Go type, as %T prints it (*v1.Memcached).
	Type string
	// Option names the option (WithObservedGeneration).
	Option string
	// Missing says what the type lacks.
	Missing string
}

// Error implements error.
func (e *optionError) Error() string {
	return fmt.Sprintf("%s cannot work on %s: the type has no %s", e.Option, e.Type, e.Missing)
}

// PatchOption configures [Patcher.Patch]. Every PatchOption is also a
// [ForOption], passed to each Patch that [For] makes.
type PatchOption interface {
	ApplyToPatch(*PatchOptions)
}

// ForOptions configures [For]. The zero value is no option.
type ForOptions struct {
	// finalizers are registered, in order, on the finalizer handler of For
	// (see [WithFinalizer]).
	finalizers []finalizerOption
	// ReadySummary sets the Ready condition from the others after the body.
	ReadySummary bool
	// SummaryOptions configure that summary.
	SummaryOptions []conditions.SummaryOption
	// PatchOptions are passed to every Patch.
	PatchOptions []PatchOption
}

// ForOption configures [For].
type ForOption interface {
	ApplyToFor(*ForOptions)
}

// WithOptimisticLock makes every write fail with a conflict when the object
// changed since it was read, instead of merging.
type WithOptimisticLock struct{}

// ApplyToPatch implements [PatchOption].
func (WithOptimisticLock) ApplyToPatch(o *PatchOptions) { o.OptimisticLock = true }

// ApplyToFor implements [ForOption].
func (w WithOptimisticLock) ApplyToFor(o *ForOptions) { o.PatchOptions = append(o.PatchOptions, w) }

// WithObservedGeneration sets status.observedGeneration to
// metadata.generation in the status write, as kstatus expects of a
// reconciled object. For a kind without a status subresource, where a
// status write bumps the generation, it records the generation that write
// produces, and a change of observedGeneration alone is not written.
// [For] (and [Patcher.PatchOnExit]) sets it only after a body that
// returned no error: a failed reconcile did not observe the generation,
// and the status keeps the number of the last one that did (as
// cluster-api's controllers pass WithStatusObservedGeneration only when
// reterr is nil). A failure that
// only a change from outside can fix (bad input) is no error to return:
// mark it Stalled (conditions.MarkStalled) and return nil, so that the
// status observes the generation and kstatus reads the object as Failed,
// not as still in progress.
//
// The object's Go type needs an int64 status field observedGeneration
// (kubebuilder's scaffold has none: add it to the type and its CRD). [For]
// refuses the option on a type without one, and [Patcher.Patch] before any
// write, with an error that names the type and the missing field: the API
// server would prune the field, and every reconcile would write it again.
type WithObservedGeneration struct{}

// ApplyToPatch implements [PatchOption].
func (WithObservedGeneration) ApplyToPatch(o *PatchOptions) { o.ObservedGeneration = true }

// ApplyToFor implements [ForOption].
func (w WithObservedGeneration) ApplyToFor(o *ForOptions) { o.PatchOptions = append(o.PatchOptions, w) }

// WithOwnedConditions lists condition types that this controller alone
// writes: on a conflict its values win.
type WithOwnedConditions []string

// ApplyToPatch implements [PatchOption].
func (w WithOwnedConditions) ApplyToPatch(o *PatchOptions) {
	o.OwnedConditions = append(o.OwnedConditions, w...)
}

// ApplyToFor implements [ForOption].
func (w WithOwnedConditions) ApplyToFor(o *ForOptions) { o.PatchOptions = append(o.PatchOptions, w) }

// WithConditionLists names condition lists besides status.conditions, as
// dotted paths, that are merged by type like it: cluster-api's
// "status.deprecated.v1beta1.conditions", say. Without it such a list is
// an ordinary field, replaced whole.
type WithConditionLists []string

// ApplyToPatch implements [PatchOption].
func (w WithConditionLists) ApplyToPatch(o *PatchOptions) {
	o.ConditionLists = append(o.ConditionLists, w...)
}

// ApplyToFor implements [ForOption].
func (w WithConditionLists) ApplyToFor(o *ForOptions) { o.PatchOptions = append(o.PatchOptions, w) }

// WithCacheWait makes Patch, after it wrote, wait until the Patcher's
// client holds the patched object (cachewait.ForWrite), so that the next
// reconcile reads what this one wrote: a manager's client
// (steady.NewClient(mgr)) reads the manager's cache; a client that reads
// the API server holds every write at once. The client's API reader
// (steady.NewClient's) tells an object released by the write from a
// lagging cache; Options configure the wait further. A
// [*cachewait.TimeoutError] is returned when the client does not hold the
// write in time: requeue, the write itself succeeded ([For] turns it into
// a requeue).
type WithCacheWait struct {
	Options []cachewait.WaitOption
}

// ApplyToPatch implements [PatchOption].
func (w WithCacheWait) ApplyToPatch(o *PatchOptions) {
	o.CacheWait, o.CacheWaitOptions = true, w.Options
}

// ApplyToFor implements [ForOption].
func (w WithCacheWait) ApplyToFor(o *ForOptions) { o.PatchOptions = append(o.PatchOptions, w) }

// WithEvents records an Event on the object whenever a Patch writes a flip
// of its Ready condition: Normal "Ready" when it became True, Warning
// "NotReady" when it became False or Unknown, with the condition's reason and
// message. The flip is the one this Patch made (Ready as the reconcile left
// it against the snapshot), not one another writer made meanwhile. Nothing
// is recorded when it did not change Ready or its status write failed; a
// flip written before a later write failed is recorded.
//
//	reconcile.WithEvents{Recorder: mgr.GetEventRecorderFor("bucket-controller")}
type WithEvents struct{ Recorder record.EventRecorder }

// ApplyToPatch implements [PatchOption].
func (w WithEvents) ApplyToPatch(o *PatchOptions) { o.Events = w.Recorder }

// ApplyToFor implements [ForOption].
func (w WithEvents) ApplyToFor(o *ForOptions) { o.PatchOptions = append(o.PatchOptions, w) }

// finalizerOption registers a finalizer with [For] (see [WithFinalizer]).
type finalizerOption struct {
	Name      string
	Finalizer finalizer.Func
	// When limits the finalizer to the objects it selects.
	When []finalizer.When
}

// WithFinalizer registers a finalizer and its cleanup: [For] persists it
// before calling the body, and on deletion runs the cleanup instead of the
// body, removing the finalizer once the cleanup succeeded. A controller of
// a kind it shares (Services, Nodes, Pods) says which objects it
// finalizes with finalizer.When:
//
//	reconcile.WithFinalizer("example.com/ip", finalizer.Func(releaseIP),
//		finalizer.When(func(o client.Object) bool {
//			return o.(*corev1.Service).Spec.Type == corev1.ServiceTypeLoadBalancer
//		}))
//
// Several When select the objects all of them select. An object no longer
// selected has the cleanup run and the finalizer removed, then the body
// runs.
func WithFinalizer(name string, f finalizer.Func, when ...finalizer.When) ForOption {
	return finalizerOption{Name: name, Finalizer: f, When: when}
}

func (f finalizerOption) ApplyToFor(o *ForOptions) { o.finalizers = append(o.finalizers, f) }

// readySummaryOption sets the Ready summary in [For] (see [WithReadySummary]).
type readySummaryOption struct {
	Options []conditions.SummaryOption
}

// WithReadySummary sets the Ready condition from the others after the body
// ran (see [conditions.SetSummary]). After a body that returned an error,
// Ready is not made True where it was not (absent, False or Unknown: it
// stays as it was), and claims no generation the conditions it summarizes
// did not observe: its observedGeneration is the lowest of theirs (never
// lower than it was; a condition without one, as meta.SetStatusCondition
// leaves it, or none to summarize, keeps it as it was), so a reconcile of
// a new generation that failed before marking anything leaves Ready at the
// previous one. The object's Go type needs its
// conditions: GetConditions and SetConditions methods, or, as kubebuilder
// scaffolds it, a status.conditions field of type []metav1.Condition;
// [For] refuses it on any other type with an error that names the type.
func WithReadySummary(opts ...conditions.SummaryOption) ForOption {
	return readySummaryOption{Options: opts}
}

func (r readySummaryOption) ApplyToFor(o *ForOptions) {
	o.ReadySummary, o.SummaryOptions = true, r.Options
}

func splitPaths(paths []string) [][]string {
	var out [][]string
	for _, p := range paths {
		if p = strings.Trim(p, "."); p != "" {
			out = append(out, strings.Split(p, "."))
		}
	}
	return out
}

var (
	_ PatchOption = WithCacheWait{}
	_ PatchOption = WithOptimisticLock{}
	_ PatchOption = WithObservedGeneration{}
	_ PatchOption = WithOwnedConditions(nil)
	_ PatchOption = WithConditionLists(nil)

	_ ForOption = WithCacheWait{}
	_ ForOption = WithOptimisticLock{}
	_ ForOption = WithObservedGeneration{}
	_ ForOption = WithOwnedConditions(nil)
	_ ForOption = WithConditionLists(nil)
	_ ForOption = WithEvents{}
	_ ForOption = finalizerOption{}
	_ ForOption = readySummaryOption{}
)

package finalizer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/object"
	"github.com/steadyk8s/steady/internal/observe"
	"github.com/steadyk8s/steady/internal/patch"
	"github.com/steadyk8s/steady/internal/scope"
)

// Handler runs the finalizer flow for its registered finalizers. Make one
// with [NewHandler]; it is safe for concurrent use once registration is done.
type Handler struct {
	c     client.Client
	w     patch.Writer
	mu    sync.RWMutex
	order []string
	funcs map[string]Func
	when  map[string]func(client.Object) bool
}

// NewHandler returns a Handler that writes through c. Give it
// steady.NewClient(mgr), which carries the manager's API reader: the
// re-reads after a conflict go through it. Given a client that carries
// none (a manager's GetClient() itself), a re-read that still shows the
// conflicting state (a lagging cache) is repeated with backoff instead.
func NewHandler(c client.Client) *Handler {
	api := scope.Held(c).APIReader()
	return &Handler{c: c, w: patch.Writer{Client: observe.Client(c, "finalizer"), Reader: observe.Reader(api, "finalizer")}, funcs: map[string]Func{}, when: map[string]func(client.Object) bool{}}
}

// Register adds a named finalizer with its cleanup. Names must be qualified
// names ("example.com/cleanup"), else an error that names the finalizer
// and what is wrong; registering a name twice is an error. Cleanups run in
// registration order. when limits the finalizer to the objects it selects
// (see [When]); with several, to the objects all of them select.
func (h *Handler) Register(name string, f Func, when ...When) error {
	if err := object.ValidateFinalizerName(nil, name); err != nil {
		return err
	}
	if f == nil {
		return fmt.Errorf("finalizer: %s registered without a Func", name)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, dup := h.funcs[name]; dup {
		return fmt.Errorf("finalizer: %s is already registered", name)
	}
	h.funcs[name] = f
	if len(when) > 0 {
		h.when[name] = func(obj client.Object) bool {
			return !slices.ContainsFunc(when, func(w When) bool { return w != nil && !w(obj) })
		}
	}
	h.order = append(h.order, name)
	return nil
}

// names lists the registered finalizers in registration order.
func (h *Handler) names() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return append([]string(nil), h.order...)
}

// Handle runs the flow on obj, which must have been read from the API server
// (a cached copy will do) and not changed since:
//
//   - obj alive: every registered finalizer missing from obj is added and
//     persisted before Handle returns (one PATCH; none when all are there).
//     A finalizer registered with [When] is added only to the objects it
//     selects; one on obj that it no longer selects has its cleanup run, as
//     on deletion, and is removed once the cleanup succeeded (in the same
//     write as the others added); Result.Deleting stays false.
//   - obj being deleted: the cleanup of each registered finalizer on obj
//     runs; the finalizers whose cleanup succeeded are removed, and what the
//     cleanups changed on obj (status, conditions) is written, also when a
//     cleanup failed or is in progress ([InProgress]): one PATCH of status,
//     one of the finalizers, each only when needed. A failed cleanup keeps
//     its finalizer and its [*CleanupError] is returned, joined with the
//     others. When the last finalizer goes and the object with it, that is
//     success.
//   - obj gone (NotFound on the write, or a new object with another UID
//     under its name): Result.Gone, no error, nothing written. Gone is
//     found by the write, so on a stale copy of a deleting object that is
//     gone the cleanups have run again first (they are idempotent); the
//     new object is never written.
//
// Writes go through one engine with reconcile.Patcher: the finalizer list
// is rebased on the latest object and locked on its resourceVersion, so
// another writer's finalizers are never dropped; a conflict re-reads the
// object (through the API reader c carries, waiting with backoff for a
// lagging cache without one); every write carries the object's UID as a
// precondition, so a recreated object is never written. After a write, obj
// holds the API server's answer.
func (h *Handler) Handle(ctx context.Context, obj client.Object) (Result, error) {
	if obj.GetDeletionTimestamp() != nil {
		return h.finalize(ctx, obj)
	}
	var add, released []string // missing on obj; on obj but no longer selected by their When
	for _, n := range h.names() {
		switch on := controllerutil.ContainsFinalizer(obj, n); {
		case !h.selects(n, obj):
			if on {
				released = append(released, n)
			}
		case !on:
			add = append(add, n)
		}
	}
	if len(add) == 0 && len(released) == 0 {
		return Result{}, nil // the common reconcile: no copy of obj
	}
	var before client.Object
	if len(released) > 0 {
		// The cleanups may change anything on obj.
		before = obj.DeepCopyObject().(client.Object)
	} else {
		before = finalizersCopy(obj)
	}
	obj.SetFinalizers(append(obj.GetFinalizers(), add...)) // valid names (Register), on an object not being deleted
	if len(released) > 0 {
		// Run the cleanups of the finalizers obj's When no longer selects (the
		// Service that is no LoadBalancer any more), and write in one go the
		// finalizers that are selected and missing (obj already carries
		// them), the removal of those whose cleanup succeeded, and what the
		// cleanups changed.
		res, done, errs := h.cleanups(ctx, obj, released)
		return h.write(ctx, before, obj, res, done, errs, "releasing "+strings.Join(released, ", ")+" from")
	}
	res, err := h.writer(ctx, obj).Patch(ctx, before, obj, patch.Options{})
	if err != nil {
		// Deleted meanwhile: the API server refuses new finalizers. Run the
		// flow of a deleting object on what is there now.
		r := h.w.Reader // the API reader the client carries, else the client
		if r == nil {
			r = h.c
		}
		fresh := object.EmptyLike(obj)
		if r.Get(ctx, client.ObjectKeyFromObject(obj), fresh) == nil &&
			fresh.GetUID() == before.GetUID() && fresh.GetDeletionTimestamp() != nil {
			object.Copy(obj, fresh)
			return h.finalize(ctx, obj)
		}
		object.Copy(obj, before)
		return Result{}, fmt.Errorf("finalizer: adding finalizers to %s: %w", h.describe(obj), err)
	}
	if res.Gone {
		return Result{Deleting: true, Gone: true}, nil
	}
	return Result{Updated: len(res.Wrote) > 0}, nil
}

// finalizersCopy is obj as read, for a write that only adds finalizers to
// it: a copy of its own finalizers (and, unstructured, of the metadata map
// that holds them), which Ensure changes, sharing every other map and slice
// with obj. The engine only reads its snapshot
// (internal/patch.TestPatchOnlyReadsTheSnapshot), and obj takes the answer
// without changing what it held: a deep copy would be copied for nothing.
func finalizersCopy(obj client.Object) client.Object {
	c := object.Shallow(obj)
	if u, ok := c.(*unstructured.Unstructured); ok {
		if md, ok := u.Object["metadata"].(map[string]any); ok {
			u.Object["metadata"] = maps.Clone(md)
		}
	}
	if f := obj.GetFinalizers(); f != nil {
		c.SetFinalizers(slices.Clone(f))
	}
	return c
}

// selects reports whether the finalizer n is for obj (its When holds, or
// it has none).
func (h *Handler) selects(n string, obj client.Object) bool {
	h.mu.RLock()
	when := h.when[n]
	h.mu.RUnlock()
	return when == nil || when(obj)
}

// write removes from obj the finalizers in done, writes obj (its
// finalizers and what the cleanups changed) against before, and completes
// res: Gone (which is Deleting too) and Updated. what names the write in an
// error.
func (h *Handler) write(ctx context.Context, before, obj client.Object, res Result, done []string, errs []error, what string) (Result, error) {
	fins := make([]string, 0, len(obj.GetFinalizers()))
	for _, f := range obj.GetFinalizers() {
		if !slices.Contains(done, f) {
			fins = append(fins, f)
		}
	}
	obj.SetFinalizers(fins)
	wr, err := h.writer(ctx, obj).Patch(ctx, before, obj, patch.Options{})
	if err != nil {
		errs = append(errs, fmt.Errorf("finalizer: %s %s: %w", what, h.describe(obj), err))
	}
	if wr.Gone {
		res.Gone, res.Deleting = true, true
	}
	res.Updated = len(wr.Wrote) > 0
	return res, errors.Join(errs...)
}

// cleanups runs the cleanups of names, in order, on obj, and returns the
// names whose cleanup succeeded, the shortest requeue of those in progress
// and the errors of those that failed.
func (h *Handler) cleanups(ctx context.Context, obj client.Object, names []string) (Result, []string, []error) {
	h.mu.RLock()
	funcs := h.funcs
	h.mu.RUnlock()
	res := Result{}
	var errs []error
	var done []string
	for _, n := range names {
		err := funcs[n](ctx, obj)
		var ip *inProgressError
		switch {
		case err == nil:
			done = append(done, n)
		case errors.As(err, &ip):
			d := ip.RequeueAfter
			if d <= 0 {
				d = defaultInProgressRequeue
			}
			if res.RequeueAfter == 0 || d < res.RequeueAfter {
				res.RequeueAfter = d
			}
		default:
			errs = append(errs, &CleanupError{Object: h.describe(obj), Finalizer: n, Err: err})
		}
	}
	return res, done, errs
}

func (h *Handler) finalize(ctx context.Context, obj client.Object) (Result, error) {
	before := obj.DeepCopyObject().(client.Object)
	present := slices.DeleteFunc(h.names(), func(n string) bool { return !controllerutil.ContainsFinalizer(before, n) })
	res, done, errs := h.cleanups(ctx, obj, present)
	res.Deleting = true
	// What the cleanups did to the finalizers is not theirs to decide: only
	// the finalizers of succeeded cleanups go (from the list as read).
	obj.SetFinalizers(before.GetFinalizers())
	what := "writing the cleanup's changes to"
	if len(done) > 0 {
		what = "removing " + strings.Join(done, ", ") + " from"
	}
	return h.write(ctx, before, obj, res, done, errs, what)
}

// describe names obj as "Kind namespace/name".
func (h *Handler) describe(obj client.Object) string {
	return object.Describe(obj, h.c.Scheme())
}

// writer is the Handler's writer of obj, which records the write in the
// State of the client's cluster (see [scope.Of]: the one the client
// carries, or reconcile.For's), so that a reconcile reads its own write of
// a finalizer as it does its own write of anything else.
func (h *Handler) writer(ctx context.Context, obj client.Object) *patch.Writer {
	w := h.w
	if w.State = scope.Of(ctx, h.c); w.State != nil {
		w.Key, _ = scope.KeyOf(obj, h.c.Scheme())
	}
	return &w
}

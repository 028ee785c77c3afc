package finalizer

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// maxConflicts bounds how often a finalizer write is retried after another
// writer changed the object meanwhile.
const maxConflicts = 10

// Handler runs the finalizer flow for its registered finalizers. Make one
// with [NewHandler]; it is safe for concurrent use once registration is done.
type Handler struct {
	c     client.Client
	mu    sync.RWMutex
	names []string
	funcs map[string]Finalizer
}

// NewHandler returns a Handler that writes through c.
func NewHandler(c client.Client) *Handler {
	return &Handler{c: c, funcs: map[string]Finalizer{}}
}

// Register adds a named finalizer with its cleanup. Names must be qualified
// names ("example.com/cleanup"); registering a name twice is an error.
// Cleanups run in registration order.
func (h *Handler) Register(name string, f Finalizer) error {
	if errs := validation.IsQualifiedName(name); len(errs) > 0 {
		return fmt.Errorf("finalizer: invalid name %q: %s", name, strings.Join(errs, "; "))
	}
	if f == nil {
		return fmt.Errorf("finalizer: %s registered without a Finalizer", name)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, dup := h.funcs[name]; dup {
		return fmt.Errorf("finalizer: %s is already registered", name)
	}
	h.funcs[name] = f
	h.names = append(h.names, name)
	return nil
}

// Names lists the registered finalizers in registration order.
func (h *Handler) Names() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return append([]string(nil), h.names...)
}

// Handle runs the flow on obj, which must have been read from the API server
// and not changed since:
//
//   - obj alive: every registered finalizer missing from obj is added and
//     persisted before Handle returns (one PATCH; none when all are there).
//   - obj being deleted: the cleanup of each registered finalizer on obj
//     runs, and the finalizers whose cleanup succeeded are removed in one
//     PATCH; a failed cleanup keeps its finalizer and its [*CleanupError] is
//     returned, joined with the others. When the last finalizer goes and
//     the object with it, that is success.
//
// A finalizer is never added to an object being deleted, and another
// writer's finalizers are never dropped: on a conflict Handle reads the
// object again and reapplies only its own change. After a write, obj holds
// the API server's answer.
func (h *Handler) Handle(ctx context.Context, obj client.Object) (Result, error) {
	names := h.Names()
	for attempt := 0; ; attempt++ {
		if obj.GetDeletionTimestamp() != nil {
			return h.finalize(ctx, obj, names)
		}
		before := obj.DeepCopyObject().(client.Object)
		added := false
		for _, n := range names {
			ok, _ := Ensure(obj, n) // cannot fail: obj is not being deleted
			added = added || ok
		}
		if !added {
			return Result{}, nil
		}
		err := h.c.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		if err == nil {
			return Result{Updated: true}, nil
		}
		if !apierrors.IsConflict(err) || attempt == maxConflicts {
			return Result{}, fmt.Errorf("finalizer: adding finalizers to %s: %w", h.describe(obj), err)
		}
		if err := refetch(ctx, h.c, obj); err != nil {
			return Result{}, fmt.Errorf("finalizer: adding finalizers to %s: %w", h.describe(obj), err)
		}
	}
}

func (h *Handler) finalize(ctx context.Context, obj client.Object, names []string) (Result, error) {
	h.mu.RLock()
	funcs := h.funcs
	h.mu.RUnlock()
	var errs []error
	var done []string
	for _, n := range names {
		if !Has(obj, n) {
			continue
		}
		if err := funcs[n].Finalize(ctx, obj); err != nil {
			errs = append(errs, &CleanupError{Object: h.describe(obj), Finalizer: n, Err: err})
			continue
		}
		done = append(done, n)
	}
	res := Result{Deleting: true}
	if len(done) == 0 {
		return res, errors.Join(errs...)
	}
	for attempt := 0; ; attempt++ {
		before := obj.DeepCopyObject().(client.Object)
		removed := false
		for _, n := range done {
			removed = Remove(obj, n) || removed
		}
		if !removed {
			break
		}
		err := h.c.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		if err == nil || apierrors.IsNotFound(err) {
			res.Updated = true // NotFound: the object went with its last finalizer
			break
		}
		if !apierrors.IsConflict(err) || attempt == maxConflicts {
			errs = append(errs, fmt.Errorf("finalizer: removing %s from %s: %w", strings.Join(done, ", "), h.describe(obj), err))
			break
		}
		if err := refetch(ctx, h.c, obj); apierrors.IsNotFound(err) {
			res.Updated = true
			break
		} else if err != nil {
			errs = append(errs, fmt.Errorf("finalizer: removing %s from %s: %w", strings.Join(done, ", "), h.describe(obj), err))
			break
		}
	}
	return res, errors.Join(errs...)
}

// refetch reads obj again into a zeroed object, so that no field of the old
// copy survives where the new one omits it (an emptied finalizer list, say).
func refetch(ctx context.Context, c client.Client, obj client.Object) error {
	gvk := obj.GetObjectKind().GroupVersionKind()
	key := client.ObjectKeyFromObject(obj)
	v := reflect.ValueOf(obj).Elem()
	v.Set(reflect.Zero(v.Type()))
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return c.Get(ctx, key, obj)
}

// describe names obj as "Kind namespace/name" where its kind is known.
func (h *Handler) describe(obj client.Object) string {
	gvk, err := apiutil.GVKForObject(obj, h.c.Scheme())
	if err != nil || gvk.Kind == "" {
		return key(obj)
	}
	return gvk.Kind + " " + key(obj)
}

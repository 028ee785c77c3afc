package reconcile

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/finalizer"
)

// Func is the body of a reconcile for [For]: it gets the live object, changes
// it (spec, metadata, status, conditions) and returns; [For] writes what
// changed.
type Func[P client.Object] func(ctx context.Context, obj P) (ctrl.Result, error)

type forConfig struct {
	finalizers   []namedFinalizer
	summary      []conditions.SummaryOption
	summaryOn    bool
	patchOptions []PatchOption
}

type namedFinalizer struct {
	name string
	f    finalizer.Finalizer
}

// ForOption configures [For].
type ForOption func(*forConfig)

// WithFinalizer registers a finalizer and its cleanup: [For] persists it
// before calling the body, and on deletion runs the cleanup instead of the
// body, removing the finalizer once the cleanup succeeded.
func WithFinalizer(name string, f finalizer.Finalizer) ForOption {
	return func(c *forConfig) { c.finalizers = append(c.finalizers, namedFinalizer{name, f}) }
}

// WithReadySummary sets the Ready condition from the others after the body
// ran (see [conditions.SetSummary]); the object must be a
// [conditions.Setter].
func WithReadySummary(opts ...conditions.SummaryOption) ForOption {
	return func(c *forConfig) { c.summaryOn, c.summary = true, opts }
}

// WithPatchOptions passes options to every [Patcher.Patch].
func WithPatchOptions(opts ...PatchOption) ForOption {
	return func(c *forConfig) { c.patchOptions = append(c.patchOptions, opts...) }
}

// For returns a controller-runtime Reconciler for objects of type T that
// does the usual steps around fn: read the object (a missing one is not an
// error), run the finalizers (persisting them first; on deletion, running
// their cleanups instead of fn), snapshot it, call fn, set the Ready summary,
// and write what changed in one deferred [Patcher.Patch], joining its error
// with fn's. Use it as
//
//	r, err := reconcile.For[v1.Bucket](mgr.GetClient(), reconcileBucket,
//		reconcile.WithFinalizer("example.com/bucket", finalizer.Func(deleteBucket)),
//		reconcile.WithReadySummary(conditions.ForConditionTypes{"BucketReady"}),
//		reconcile.WithPatchOptions(reconcile.WithObservedGeneration{}))
//	...
//	err = ctrl.NewControllerManagedBy(mgr).For(&v1.Bucket{}).Complete(r)
//
// The Patcher stays usable without For.
func For[T any, P interface {
	*T
	client.Object
}](c client.Client, fn Func[P], opts ...ForOption) (crreconcile.Reconciler, error) {
	cfg := forConfig{}
	for _, o := range opts {
		o(&cfg)
	}
	var zero P = new(T)
	if _, ok := any(zero).(conditions.Setter); cfg.summaryOn && !ok {
		return nil, fmt.Errorf("reconcile: For[%T]: WithReadySummary needs GetConditions and SetConditions on the object", zero)
	}
	var h *finalizer.Handler
	if len(cfg.finalizers) > 0 {
		h = finalizer.NewHandler(c)
		for _, nf := range cfg.finalizers {
			if err := h.Register(nf.name, nf.f); err != nil {
				return nil, fmt.Errorf("reconcile: For[%T]: %w", zero, err)
			}
		}
	}
	return crreconcile.Func(func(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
		var obj P = new(T)
		if err := c.Get(ctx, req.NamespacedName, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return ctrl.Result{}, nil
			}
			return ctrl.Result{}, fmt.Errorf("reconcile: reading %s: %w", req.NamespacedName, err)
		}
		if h != nil {
			res, err := h.Handle(ctx, obj)
			if err != nil || res.Deleting {
				return ctrl.Result{}, err
			}
		}
		p, err := NewPatcher(c, obj)
		if err != nil {
			return ctrl.Result{}, err
		}
		defer func() {
			if cfg.summaryOn {
				conditions.SetSummary(any(obj).(conditions.Setter), conditions.Ready, cfg.summary...)
			}
			p.PatchOnExit(ctx, obj, &reterr, cfg.patchOptions...)
		}()
		return fn(ctx, obj)
	}), nil
}

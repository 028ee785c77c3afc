package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steadyk8s/steady/indexer"
	"github.com/steadyk8s/steady/internal/scope"
	"github.com/steadyk8s/steady/predicates"
)

// index is a field index that [Controller.Index] registers on the
// manager's cache: an *indexer.Index[T] is one.
type index interface {
	Name() string
	Register(ctx context.Context, fi client.FieldIndexer) error
}

var _ index = (*indexer.Index[client.Object])(nil)

// Controller sets up, in one place, what a steady controller of objects of
// type T needs on a manager: the [For] reconciler, the indexes, and
// controller-runtime's controller with its watches. Make it with
// [NewController], describe it with its methods, and register it with
// [Controller.Complete]:
//
//	rec, err := reconcile.NewController[v1alpha1.Tenant](mgr, r.reconcile,
//		reconcile.WithReadySummary(conditions.SummaryOptions{ConditionTypes: []string{"QuotaReady"}}),
//		reconcile.WithObservedGeneration{}).
//		Named("tenant").
//		Owns(&corev1.ResourceQuota{}, &corev1.LimitRange{}).
//		Index(TenantsByNamespace).
//		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.tenantsOfNamespace),
//			predicates.GenerationOrMetadataChanged()).
//		Complete()
//
// It stands for the hand-written wiring
//
//	TenantsByNamespace.Register(ctx, mgr.GetFieldIndexer())
//	indexer.ControllerOwner[*corev1.ResourceQuota]().Register(ctx, mgr.GetFieldIndexer())
//	indexer.ControllerOwner[*corev1.LimitRange]().Register(ctx, mgr.GetFieldIndexer())
//	rec, err := reconcile.For[v1alpha1.Tenant](steady.NewClient(mgr), r.reconcile, ...)
//	ctrl.NewControllerManagedBy(mgr).Named("tenant").
//		For(&v1alpha1.Tenant{}, builder.WithPredicates(predicates.GenerationChanged())).
//		Owns(&corev1.ResourceQuota{}).Owns(&corev1.LimitRange{}).
//		Watches(&corev1.Namespace{}, ..., builder.WithPredicates(...)).
//		Complete(rec)
//
// with these defaults:
//
//   - the client is the manager's, carrying the manager's API reader and
//     a memory of its own, unless [Controller.Client] gives one;
//   - the watch of T passes only [predicates.GenerationChanged]: an update
//     that changes metadata.generation (the spec), starts the deletion or
//     changes the finalizers, and every create and delete. The status
//     writes For makes do not change the generation, so a controller is
//     not woken by its own writes; the deletion of an object with a
//     finalizer is an update that sets deletionTimestamp, which passes, so
//     its cleanup runs.
//
// Other predicates for T, or controller-runtime's controller options
// (MaxConcurrentReconciles, RateLimiter), mean the hand-written wiring
// above: [For] with ctrl.NewControllerManagedBy.
//
// Methods called more than once add to what was given before (Named and
// Client replace it). A Controller is used once, by one goroutine.
type Controller[T any, P interface {
	*T
	client.Object
}] struct {
	mgr     ctrl.Manager
	fn      func(ctx context.Context, obj P) (ctrl.Result, error)
	name    string
	client  client.Client
	opts    []ForOption
	owns    []client.Object
	indexes []index
	watches []watch
}

// watch is one Watches call.
type watch struct {
	obj   client.Object
	h     handler.EventHandler
	preds []predicate.Predicate
}

// NewController starts describing the controller of objects of type T that
// runs fn through [For] with opts (finalizers, the Ready summary,
// observedGeneration, Patch options: For's signature), on mgr. Nothing is
// registered until [Controller.Complete].
func NewController[T any, P interface {
	*T
	client.Object
}](mgr ctrl.Manager, fn func(ctx context.Context, obj P) (ctrl.Result, error), opts ...ForOption) *Controller[T, P] {
	return &Controller[T, P]{mgr: mgr, fn: fn, opts: opts}
}

// Named names the controller (its logs, metrics and workqueue). Empty, as
// without it, is controller-runtime's default: the kind, lowercased. Two
// controllers of one kind in one manager need distinct names.
func (c *Controller[T, P]) Named(name string) *Controller[T, P] {
	c.name = name
	return c
}

// Client sets the client [For] reads and writes through; nil, as without
// it, is the manager's (cached) client. One that carries no memory of its
// own (one not made by steady.NewClient) gets one, ended by the
// manager's informers, with the manager's API reader; one made by
// steady.NewClient (share it between the controllers of a manager) brings
// its own, and its API reader.
func (c *Controller[T, P]) Client(cl client.Client) *Controller[T, P] {
	c.client = cl
	return c
}

// Owns watches objects of these kinds and reconciles their controller
// owner of type T when they change (controller-runtime's Owns, once per
// kind), and registers their [indexer.ControllerOwner] index, through
// which ownership.ListChildren finds the children of an owner. Every event
// of a child passes: a child's status (a Pod's phase) is often what the
// owner reports.
func (c *Controller[T, P]) Owns(objs ...client.Object) *Controller[T, P] {
	c.owns = append(c.owns, objs...)
	return c
}

// Index registers these indexes on the manager's cache: the indexes the
// reconcile or a watch's map function queries. Registering one that
// another controller of the same manager registered too is a no-op.
func (c *Controller[T, P]) Index(idx ...index) *Controller[T, P] {
	c.indexes = append(c.indexes, idx...)
	return c
}

// Watches watches objects of obj's kind and enqueues what h maps their
// events to, those that pass all of preds (controller-runtime's Watches
// with builder.WithPredicates).
func (c *Controller[T, P]) Watches(obj client.Object, h handler.EventHandler, preds ...predicate.Predicate) *Controller[T, P] {
	c.watches = append(c.watches, watch{obj: obj, h: h, preds: preds})
	return c
}

// Complete builds the [For] reconciler, registers the indexes, and
// registers the controller with the manager, which must not have started.
// It returns the reconciler the controller runs, for a test to call, or
// for a Reconcile method to delegate to.
func (c *Controller[T, P]) Complete() (crreconcile.Reconciler, error) {
	var zero P = new(T)
	fail := func(err error) (crreconcile.Reconciler, error) {
		return nil, fmt.Errorf("reconcile: controller %s: %w", cmp.Or(c.name, fmt.Sprintf("%T", zero)), err)
	}
	if c.mgr == nil {
		return fail(errors.New("no manager"))
	}
	cl := c.client
	if cl == nil {
		cl = c.mgr.GetClient()
	}
	if scope.Held(cl) == nil {
		// What the reconciler remembers hangs off the manager: ended by its
		// informers (which watch T and the owned kinds), and its API reader
		// is the manager's, as with steady.NewClient.
		cl = scope.Wrap(cl, scope.New(cl, c.mgr.GetAPIReader(), c.mgr.GetCache()))
	}
	rec, err := For[T, P](cl, c.fn, c.opts...)
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	fi := c.mgr.GetFieldIndexer()
	var errs []error
	for _, o := range c.owns {
		if err := indexer.RegisterControllerOwner(ctx, fi, o); err != nil {
			errs = append(errs, fmt.Errorf("owned %T: %w", o, err))
		}
	}
	for _, idx := range c.indexes {
		if err := idx.Register(ctx, fi); err != nil {
			errs = append(errs, fmt.Errorf("index %q: %w", idx.Name(), err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fail(err)
	}
	b := ctrl.NewControllerManagedBy(c.mgr).For(zero, builder.WithPredicates(predicates.GenerationChanged()))
	if c.name != "" {
		b = b.Named(c.name)
	}
	for _, o := range c.owns {
		b = b.Owns(o)
	}
	for _, w := range c.watches {
		b = b.Watches(w.obj, w.h, builder.WithPredicates(w.preds...))
	}
	if err := b.Complete(rec); err != nil {
		return fail(err)
	}
	return rec, nil
}

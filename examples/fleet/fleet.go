// Package fleet is the User→Namespace operator (examples/usernamespace)
// across a fleet of clusters, on multicluster-runtime: one controller,
// every cluster the provider engages, each User reconciled in its own
// cluster with that cluster's client, cache and API reader (steady's
// helpers through github.com/steadyk8s/steady/multicluster).
//
// Nothing in the reconciler knows about the fleet: [SetupWithManager]
// builds examples/usernamespace's Reconciler once per cluster.
package fleet

import (
	"time"

	"k8s.io/utils/ptr"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mccontroller "sigs.k8s.io/multicluster-runtime/pkg/controller"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/steadyk8s/steady"
	"github.com/steadyk8s/steady/multicluster"
	"github.com/steadyk8s/steady/predicates"

	"github.com/steadyk8s/steady/examples/usernamespace"
	identityv1alpha1 "github.com/steadyk8s/steady/examples/usernamespace/api/v1alpha1"
)

// Options configures [SetupWithManager]; the zero value is the defaults.
type Options struct {
	// Name is the controller's name; "user" when empty.
	Name string
	// MaxConcurrentReconciles is the number of workers, shared by every
	// cluster (multicluster-runtime has one queue per controller); 4 when
	// zero.
	MaxConcurrentReconciles int
	// ReconciliationTimeout bounds each reconcile, so that a cluster whose
	// API server hangs (it does not refuse: it answers nothing) holds a
	// worker this long at most, not forever; 30s when zero.
	ReconciliationTimeout time.Duration
}

// SetupWithManager registers the User controller for every cluster of
// mgr's provider. It returns the multicluster reconciler, which says how
// many clusters it serves.
func SetupWithManager(mgr mcmanager.Manager, o Options) (*multicluster.Reconciler, error) {
	r, err := multicluster.New(mgr, func(c multicluster.Cluster) (crreconcile.Reconciler, error) {
		rec := &usernamespace.Reconciler{Client: steady.NewClient(c)}
		return rec, rec.Init()
	})
	if err != nil {
		return nil, err
	}
	if o.Name == "" {
		o.Name = "user"
	}
	if o.MaxConcurrentReconciles == 0 {
		o.MaxConcurrentReconciles = 4
	}
	if o.ReconciliationTimeout == 0 {
		o.ReconciliationTimeout = 30 * time.Second
	}
	// Owns maps a child to its controller, in the child's cluster.
	b := mcbuilder.ControllerManagedBy(mgr).
		Named(o.Name).
		WithOptions(mccontroller.Options{
			MaxConcurrentReconciles: o.MaxConcurrentReconciles,
			ReconciliationTimeout:   o.ReconciliationTimeout,
			// controller-runtime v0.24's priority queue can deadlock when
			// the manager stops while several workers wait for items: a
			// ready item is handed to a worker that has already left, with
			// the queue's lock held, and a worker finishing its reconcile
			// waits for that lock forever; the manager gives up after its
			// graceful shutdown timeout (kubernetes-sigs/controller-runtime
			// issue 3538, fixed in v0.25.2). The fleet runs several
			// workers, so it takes the rate-limited work queue until the
			// stack moves to v0.25.2.
			UsePriorityQueue: ptr.To(false),
		}).
		For(&identityv1alpha1.User{}, mcbuilder.WithPredicates(predicates.GenerationChanged()))
	for _, kind := range usernamespace.Owned() {
		b = b.Owns(kind)
	}
	return r, b.Complete(r)
}

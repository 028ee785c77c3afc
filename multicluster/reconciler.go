package multicluster

import (
	"context"
	"errors"
	"fmt"
	"sync"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/log"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	mccontext "sigs.k8s.io/multicluster-runtime/pkg/context"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	mc "sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/steadyk8s/steady"
	"github.com/steadyk8s/steady/reconcile"
)

// Cluster is one cluster of the fleet, as multicluster-runtime's provider
// engaged it: its name and its cluster (client, cache, API reader, scheme).
type Cluster struct {
	// Name is the provider's name of the cluster.
	Name mc.ClusterName
	cluster.Cluster
}

type clusterKey struct{}

// ClusterFrom returns the cluster of the request being reconciled, which
// [Reconciler] puts in the context it passes on: finalizers and other code
// that gets only a context find their cluster's client here.
// (multicluster-runtime's context.ClusterFrom returns its name too.)
func ClusterFrom(ctx context.Context) (Cluster, bool) {
	c, ok := ctx.Value(clusterKey{}).(Cluster)
	return c, ok
}

// Builder builds the controller-runtime reconciler of one cluster, with
// that cluster's client and API reader; [Reconciler] calls it once per
// engaged cluster (again when a cluster is replaced under its name).
type Builder func(c Cluster) (crreconcile.Reconciler, error)

// Reconciler is a multicluster-runtime reconciler that runs, for a request
// of a cluster, the controller-runtime reconciler built for that cluster:
// every helper of steady then works with that cluster's client, API reader
// and cache, and keeps what it keeps per reconciler (a [reconcile.For]'s
// finalizer handler, a cachewait.Client's expectations) per cluster. Make
// one with [New] or [For].
//
// It is a runnable of the manager, so that the manager's provider engages
// it: a cluster's reconciler is built when the cluster is engaged and
// dropped when it is disengaged (the cluster left the fleet). A request for
// a cluster the provider no longer knows is dropped without error.
type Reconciler struct {
	mgr   mcmanager.Manager
	build Builder

	mu    sync.Mutex
	built map[mc.ClusterName]*built
}

type built struct {
	cl  cluster.Cluster
	rec crreconcile.Reconciler
}

var (
	_ mcreconcile.Reconciler = &Reconciler{}
	_ mcmanager.Runnable     = &Reconciler{}
)

// New returns a Reconciler that builds each cluster's reconciler with
// build, and adds it to mgr so that the provider engages it. Register it
// with multicluster-runtime's builder:
//
//	r, err := multicluster.New(mgr, func(c multicluster.Cluster) (reconcile.Reconciler, error) {
//		return &BucketReconciler{Client: steady.NewClient(c)}, nil // the cluster's client and API reader
//	})
//	...
//	err = mcbuilder.ControllerManagedBy(mgr).For(&v1.Bucket{}).Complete(r)
func New(mgr mcmanager.Manager, build Builder) (*Reconciler, error) {
	if mgr == nil || build == nil {
		return nil, errors.New("multicluster: New needs a manager and a Builder")
	}
	r := &Reconciler{mgr: mgr, build: build, built: map[mc.ClusterName]*built{}}
	if err := mgr.Add(r); err != nil {
		return nil, fmt.Errorf("multicluster: adding the reconciler to the manager: %w", err)
	}
	return r, nil
}

// Start implements manager.Runnable: it waits for ctx to end (a
// Reconciler has no work of its own; it is a runnable to be engaged).
func (r *Reconciler) Start(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// Engage implements multicluster.Aware: it builds the reconciler of
// cluster name, and drops it when ctx ends (the cluster is disengaged).
func (r *Reconciler) Engage(ctx context.Context, name mc.ClusterName, cl cluster.Cluster) error {
	b, err := r.reconcilerOf(name, cl)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.built[name] == b {
			delete(r.built, name)
		}
	}()
	return nil
}

// reconcilerOf returns the reconciler built for cl, building it when the
// cluster under name is not the one it was built for.
func (r *Reconciler) reconcilerOf(name mc.ClusterName, cl cluster.Cluster) (*built, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.built[name]; ok && b.cl == cl {
		return b, nil
	}
	rec, err := r.build(Cluster{Name: name, Cluster: cl})
	if err != nil {
		return nil, fmt.Errorf("multicluster: building the reconciler of cluster %q: %w", name, err)
	}
	b := &built{cl: cl, rec: rec}
	r.built[name] = b
	return b, nil
}

// Clusters returns the number of clusters a reconciler is built for.
func (r *Reconciler) Clusters() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.built)
}

// Reconcile implements multicluster-runtime's reconcile.Reconciler: it
// runs the request's cluster's reconciler with the request, the cluster in
// the context ([ClusterFrom], and multicluster-runtime's
// context.ClusterFrom) and in the logger ("cluster").
func (r *Reconciler) Reconcile(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
	cl, err := r.mgr.GetCluster(ctx, req.ClusterName)
	if errors.Is(err, mc.ErrClusterNotFound) {
		return ctrl.Result{}, nil // the cluster left the fleet
	} else if err != nil {
		return ctrl.Result{}, fmt.Errorf("multicluster: cluster %q: %w", req.ClusterName, err)
	}
	b, err := r.reconcilerOf(req.ClusterName, cl)
	if err != nil {
		return ctrl.Result{}, err
	}
	ctx = mccontext.WithCluster(ctx, req.ClusterName)
	ctx = context.WithValue(ctx, clusterKey{}, Cluster{Name: req.ClusterName, Cluster: cl})
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("cluster", req.ClusterName))
	return b.rec.Reconcile(ctx, req.Request)
}

// Func is the body of a reconcile for [For]: it gets the cluster of the
// request and the live object, changes the object and returns; steady's
// [reconcile.For] writes what changed, to that cluster.
type Func[P client.Object] func(ctx context.Context, c Cluster, obj P) (ctrl.Result, error)

// For returns a Reconciler that runs steady's [reconcile.For] in every
// cluster of the fleet: per cluster, For with steady.NewClient of the
// cluster (its cached client, carrying its API reader and a memory of its
// own) and opts (the same for every cluster; a finalizer finds its cluster
// with [ClusterFrom]), around fn. For's re-reads, and those of the
// ownership calls fn makes with a client of the cluster, go through that
// cluster's API reader.
//
//	r, err := multicluster.For[v1.Bucket](mgr, reconcileBucket,
//		reconcile.WithReadySummary(conditions.SummaryOptions{ConditionTypes: []string{"BucketReady"}}))
//	...
//	err = mcbuilder.ControllerManagedBy(mgr).For(&v1.Bucket{}).Complete(r)
//
// opts are checked once, against the manager's local cluster, so that a
// mistake (a ready summary on a type without conditions) is an error here
// rather than in every cluster's first reconcile.
func For[T any, P interface {
	*T
	client.Object
}](mgr mcmanager.Manager, fn Func[P], opts ...reconcile.ForOption) (*Reconciler, error) {
	if mgr == nil || fn == nil {
		return nil, errors.New("multicluster: For needs a manager and a Func")
	}
	check := func(context.Context, P) (ctrl.Result, error) { return ctrl.Result{}, nil }
	if _, err := reconcile.For[T, P](mgr.GetLocalManager().GetClient(), check, opts...); err != nil {
		return nil, fmt.Errorf("multicluster: %w", err)
	}
	return New(mgr, func(c Cluster) (crreconcile.Reconciler, error) {
		body := func(ctx context.Context, obj P) (ctrl.Result, error) { return fn(ctx, c, obj) }
		// The cluster's own steady client: its API reader, and what For
		// remembers (its own writes, ownership's verdicts in the body,
		// which finds it in the context), are this cluster's, pruned by
		// its informers.
		return reconcile.For[T, P](steady.NewClient(c), body, opts...)
	})
}

package operator

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/finalizer"
	"github.com/steadyk8s/steady/internal/scope"
	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/reconcile"

	benchv1 "github.com/steadyk8s/steady/bench/api/v1alpha1"
)

// steadyReconciler is the Team operator written with steady, as its guides
// say: reconcile.For reads the Team, persists the finalizer (and on deletion
// runs its cleanup instead of the body), sets Ready from ChildrenReady and
// writes what changed, with observedGeneration, in a deferred patch;
// ownership.CreateOrUpdate keeps the children; errors are returned.
type steadyReconciler struct {
	client client.Client
}

func setupSteady(mgr ctrl.Manager, o Options) error {
	rec, err := newSteady(mgr.GetClient(), mgr.GetAPIReader())
	if err != nil {
		return err
	}
	return complete(mgr, o, rec)
}

// newSteady is the steady variant's reconciler on c, which reads its own
// writes through apiReader. c carries the memory For makes of a client that
// carries none (its ledger, no informers), with apiReader: what was
// measured when For took the reader as an option. steady.NewClient's
// memory, which the manager's informers end, would also remember the
// verdicts on the children, and change the requests measured
// (docs/benchmarks.md).
func newSteady(c client.Client, apiReader client.Reader) (crreconcile.Reconciler, error) {
	c = scope.Wrap(c, scope.New(c, apiReader, nil))
	r := &steadyReconciler{client: c}
	return reconcile.For[benchv1.Team](c, r.reconcile,
		// Nothing outside the cluster to clean up: the garbage collector
		// deletes the children. The finalizer is there to be measured.
		reconcile.WithFinalizer(benchv1.Finalizer, finalizer.Func(func(context.Context, client.Object) error { return nil })),
		reconcile.WithReadySummary(conditions.SummaryOptions{ConditionTypes: []string{benchv1.ChildrenReady}}),
		reconcile.WithObservedGeneration{},
	)
}

func (r *steadyReconciler) reconcile(ctx context.Context, t *benchv1.Team) (ctrl.Result, error) {
	meta := metav1.ObjectMeta{Namespace: t.Namespace, Name: t.Name}
	cm := &corev1.ConfigMap{ObjectMeta: meta}
	sa := &corev1.ServiceAccount{ObjectMeta: meta}
	rb := &rbacv1.RoleBinding{ObjectMeta: meta}
	var errs []error
	for _, c := range []struct {
		obj    client.Object
		mutate func()
	}{
		{cm, func() { MutateConfigMap(t, cm) }},
		{sa, func() { MutateServiceAccount(t, sa) }},
		{rb, func() { MutateRoleBinding(t, rb) }},
	} {
		if _, err := ownership.CreateOrUpdate(ctx, r.client, t, c.obj, func() error { c.mutate(); return nil }); err != nil {
			errs = append(errs, err)
		}
	}
	err := errors.Join(errs...)
	switch {
	case err == nil:
		conditions.MarkTrue(t, benchv1.ChildrenReady, ReasonReconciled, "")
	case !allRetryable(errs):
		conditions.MarkFalse(t, benchv1.ChildrenReady, ReasonFailed, "%v", err)
	}
	// A stale read (conflict, or a child the cache did not show yet) leaves
	// the conditions as they were; the error is returned (steady's guides:
	// don't swallow a conflict) and controller-runtime retries with backoff.
	return ctrl.Result{}, err
}

func allRetryable(errs []error) bool {
	for _, err := range errs {
		if !retryable(err) {
			return false
		}
	}
	return true
}

package operator

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/finalizers"
	"sigs.k8s.io/cluster-api/util/patch"

	benchv1 "github.com/steadyk8s/steady/bench/api/v1alpha1"
)

// clusterAPIReconciler is the Team operator as cluster-api's controllers
// are written: finalizers.EnsureFinalizer first (a patch, and return), then
// a patch.Helper whose deferred Patch writes the conditions (with
// WithOwnedConditions), the rest of the status and observedGeneration
// (WithStatusObservedGeneration, when the reconcile succeeded) and the
// metadata; children with controllerutil.CreateOrUpdate; errors returned.
type clusterAPIReconciler struct {
	client client.Client
	scheme *runtime.Scheme
}

func setupClusterAPI(mgr ctrl.Manager, o Options) error {
	r := &clusterAPIReconciler{client: mgr.GetClient(), scheme: mgr.GetScheme()}
	return complete(mgr, o, r)
}

// Reconcile implements reconcile.Reconciler.
func (r *clusterAPIReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	t := &benchv1.Team{}
	if err := r.client.Get(ctx, req.NamespacedName, t); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if added, err := finalizers.EnsureFinalizer(ctx, r.client, t, benchv1.Finalizer); err != nil || added {
		return ctrl.Result{}, err
	}
	helper, err := patch.NewHelper(t, r.client)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		opts := []patch.Option{patch.WithOwnedConditions{Conditions: []string{benchv1.Ready, benchv1.ChildrenReady}}}
		if reterr == nil {
			opts = append(opts, patch.WithStatusObservedGeneration{})
		}
		if err := helper.Patch(ctx, t, opts...); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, client.IgnoreNotFound(err)})
		}
	}()

	if !t.DeletionTimestamp.IsZero() {
		// Nothing outside the cluster to clean up: the garbage collector
		// deletes the children.
		controllerutil.RemoveFinalizer(t, benchv1.Finalizer)
		return ctrl.Result{}, nil
	}

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
		if _, err := controllerutil.CreateOrUpdate(ctx, r.client, c.obj, func() error {
			c.mutate()
			return controllerutil.SetControllerReference(t, c.obj, r.scheme)
		}); err != nil {
			errs = append(errs, err)
		}
	}
	err = kerrors.NewAggregate(errs)
	switch {
	case err == nil:
		conditions.Set(t, metav1.Condition{Type: benchv1.ChildrenReady, Status: metav1.ConditionTrue, Reason: ReasonReconciled})
		conditions.Set(t, metav1.Condition{Type: benchv1.Ready, Status: metav1.ConditionTrue, Reason: ReasonSucceeded})
	case !allRetryable(errs):
		conditions.Set(t, metav1.Condition{Type: benchv1.ChildrenReady, Status: metav1.ConditionFalse, Reason: ReasonFailed, Message: err.Error()})
		conditions.Set(t, metav1.Condition{Type: benchv1.Ready, Status: metav1.ConditionFalse, Reason: ReasonFailed, Message: benchv1.ChildrenReady + ": " + err.Error()})
	}
	// A stale read leaves the conditions as they were and is returned, as
	// cluster-api's controllers do; controller-runtime retries with backoff.
	return ctrl.Result{}, err
}

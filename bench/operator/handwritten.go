package operator

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	benchv1 "github.com/steadyk8s/steady/bench/api/v1alpha1"
)

// handWrittenReconciler is the Team operator in careful plain
// controller-runtime: controllerutil.AddFinalizer and Update, children with
// controllerutil.CreateOrUpdate and SetControllerReference (writing only
// when they differ), meta.SetStatusCondition, and Status().Update only when
// the status changed (typed equality); a conflict, or a create of a child
// the cache did not show yet, is a requeue.
type handWrittenReconciler struct {
	client client.Client
	scheme *runtime.Scheme
}

func setupHandWritten(mgr ctrl.Manager, o Options) error {
	r := &handWrittenReconciler{client: mgr.GetClient(), scheme: mgr.GetScheme()}
	return complete(mgr, o, r)
}

// requeue turns a stale read into a requeue and returns other errors.
func requeue(err error) (ctrl.Result, error) {
	if retryable(err) {
		return ctrl.Result{Requeue: true}, nil //nolint:staticcheck // the rate-limited requeue is the point
	}
	return ctrl.Result{}, err
}

// Reconcile implements reconcile.Reconciler.
func (r *handWrittenReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	t := &benchv1.Team{}
	if err := r.client.Get(ctx, req.NamespacedName, t); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !t.DeletionTimestamp.IsZero() {
		// Nothing outside the cluster to clean up: the garbage collector
		// deletes the children.
		if controllerutil.RemoveFinalizer(t, benchv1.Finalizer) {
			if err := r.client.Update(ctx, t); err != nil {
				return requeue(client.IgnoreNotFound(err))
			}
		}
		return ctrl.Result{}, nil
	}
	if controllerutil.AddFinalizer(t, benchv1.Finalizer) {
		if err := r.client.Update(ctx, t); err != nil {
			return requeue(err)
		}
	}

	before := t.Status.DeepCopy()
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
	err := errors.Join(errs...)
	if err != nil && allRetryable(errs) {
		return requeue(errs[0])
	}
	setConditions(t, err)
	t.Status.ObservedGeneration = t.Generation
	if !equality.Semantic.DeepEqual(before, &t.Status) {
		if uerr := r.client.Status().Update(ctx, t); uerr != nil {
			if retryable(uerr) {
				return requeue(uerr)
			}
			return ctrl.Result{}, errors.Join(err, uerr)
		}
	}
	return ctrl.Result{}, err
}

// setConditions sets ChildrenReady and Ready as steady's summary would
// (Ready first, then ChildrenReady, as meta.SetStatusCondition appends).
func setConditions(t *benchv1.Team, err error) {
	ready := metav1.Condition{Type: benchv1.Ready, Status: metav1.ConditionTrue, Reason: ReasonSucceeded, ObservedGeneration: t.Generation}
	children := metav1.Condition{Type: benchv1.ChildrenReady, Status: metav1.ConditionTrue, Reason: ReasonReconciled, ObservedGeneration: t.Generation}
	if err != nil {
		children.Status, children.Reason, children.Message = metav1.ConditionFalse, ReasonFailed, err.Error()
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, ReasonFailed, benchv1.ChildrenReady+": "+err.Error()
	}
	meta.SetStatusCondition(&t.Status.Conditions, ready)
	meta.SetStatusCondition(&t.Status.Conditions, children)
}

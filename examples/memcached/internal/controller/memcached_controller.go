// Package controller holds the Memcached controller: kubebuilder's
// scaffold, its MemcachedReconciler struct, Reconcile and SetupWithManager
// kept, and the body written with steady.
package controller

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	cachev1alpha1 "github.com/steadyk8s/steady/examples/memcached/api/v1alpha1"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/predicates"
	"github.com/steadyk8s/steady/reconcile"
)

// typeAvailable says whether the Deployment is as the Memcached asks.
const typeAvailable = "Available"

// MemcachedReconciler reconciles a Memcached object.
type MemcachedReconciler struct {
	client.Client
	Scheme *runtime.Scheme

	// steady is the reconcile.For reconciler, made once by the first
	// Reconcile or SetupWithManager: a test may build the struct and call
	// Reconcile without SetupWithManager.
	once   sync.Once
	steady crreconcile.Reconciler
	err    error
}

// +kubebuilder:rbac:groups=cache.examples.steadyk8s.io,resources=memcacheds,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cache.examples.steadyk8s.io,resources=memcacheds/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=cache.examples.steadyk8s.io,resources=memcacheds/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete

// Reconcile is the scaffold's entry point: it reads the Memcached, runs
// reconcileMemcached on it and writes what changed (status and
// conditions) in one PATCH, or none.
func (r *MemcachedReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rec, err := r.reconciler()
	if err != nil {
		return ctrl.Result{}, err
	}
	return rec.Reconcile(ctx, req)
}

// reconciler makes the steady reconciler once, on r.Client: cmd/main.go
// gives steady.NewClient(mgr), which carries the manager's API reader
// (re-reads after a conflict or a lagging cache go to the API server), a
// test its direct client (which reads the API server anyway). An error (an
// option the type cannot hold) is SetupWithManager's, at start-up.
func (r *MemcachedReconciler) reconciler() (crreconcile.Reconciler, error) {
	r.once.Do(func() {
		r.steady, r.err = reconcile.For(r.Client, r.reconcileMemcached,
			reconcile.WithReadySummary(conditions.SummaryOptions{ConditionTypes: []string{typeAvailable}}))
	})
	return r.steady, r.err
}

// reconcileMemcached makes the Deployment the Memcached asks for and marks
// Available; For writes the status.
func (r *MemcachedReconciler) reconcileMemcached(ctx context.Context, m *cachev1alpha1.Memcached) (ctrl.Result, error) {
	available := conditions.On(m, &m.Status.Conditions)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name}}
	_, err := ownership.CreateOrUpdate(ctx, r.Client, m, dep, func() error {
		mutateDeployment(m, dep)
		return nil
	})
	if err != nil {
		conditions.MarkFalse(available, typeAvailable, "Reconciling",
			"Failed to create or update the Deployment for the custom resource (%s): %v", m.Name, err)
		return ctrl.Result{}, err
	}
	conditions.MarkTrue(available, typeAvailable, "Reconciling",
		"Deployment for custom resource (%s) with %d replicas created successfully", m.Name, *dep.Spec.Replicas)
	return ctrl.Result{}, nil
}

// mutateDeployment sets, field by field, what the Memcached asks of its
// Deployment, and leaves the rest (the annotation kubectl rollout restart
// puts on the Pod template, defaults the API server fills) as it is.
func mutateDeployment(m *cachev1alpha1.Memcached, dep *appsv1.Deployment) {
	labels := map[string]string{"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": m.Name}
	dep.Spec.Replicas = ptr.To(ptr.Deref(m.Spec.Size, 1))
	if dep.CreationTimestamp.IsZero() {
		dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels} // immutable once created
	}
	if dep.Spec.Template.Labels == nil {
		dep.Spec.Template.Labels = map[string]string{}
	}
	for k, v := range labels {
		dep.Spec.Template.Labels[k] = v
	}
	pod := &dep.Spec.Template.Spec
	pod.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	if len(pod.Containers) != 1 || pod.Containers[0].Name != "memcached" {
		pod.Containers = []corev1.Container{{Name: "memcached"}}
	}
	c := &pod.Containers[0]
	c.Image = "memcached:1.6.26-alpine3.19"
	c.Command = []string{"memcached", "--memory-limit=64", "-o", "modern", "-v"}
	c.Ports = []corev1.ContainerPort{{ContainerPort: 11211, Name: "memcached", Protocol: corev1.ProtocolTCP}}
	c.SecurityContext = &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1001),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
}

// SetupWithManager sets up the controller with the Manager: Memcacheds
// (woken by a new generation, not by the controller's own status writes)
// and the Deployments they own.
func (r *MemcachedReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if _, err := r.reconciler(); err != nil {
		return fmt.Errorf("memcached controller: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&cachev1alpha1.Memcached{}, builder.WithPredicates(predicates.GenerationChanged())).
		Owns(&appsv1.Deployment{}).
		Named("memcached").
		Complete(r)
}

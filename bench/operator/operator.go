// Package operator is the benchmark's Team operator written three times:
// with steady ([Steady]), with careful hand-written controller-runtime code
// ([HandWritten]) and with cluster-api's patch helper ([ClusterAPI]). The
// three keep the same children (a ConfigMap, a ServiceAccount and a
// RoleBinding named after the Team), the same two conditions (ChildrenReady
// and Ready), status.observedGeneration and a finalizer, and are wired to
// the manager the same way, so that what differs is how they write.
package operator

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	benchv1 "github.com/steadyk8s/steady/bench/api/v1alpha1"
)

// The variants.
const (
	Steady      = "steady"
	HandWritten = "hand-written"
	ClusterAPI  = "cluster-api"
)

// Variants lists the variants in their default order.
var Variants = []string{Steady, HandWritten, ClusterAPI}

// Condition reasons.
const (
	ReasonReconciled = "Reconciled"
	ReasonFailed     = "Failed"
	// ReasonSucceeded is the reason of a True Ready (steady's summary
	// default, which the other variants write too).
	ReasonSucceeded = "Succeeded"
)

// Options configures the controller of a variant.
type Options struct {
	// Name is the controller's name, unique in the process.
	Name string
	// Trigger, when set, enqueues the Team of every event sent on it: the
	// benchmark's "nothing changes" phase.
	Trigger <-chan event.GenericEvent
	// MaxConcurrentReconciles is the controller's number of workers; 0
	// means controller-runtime's default, 1.
	MaxConcurrentReconciles int
	// Wrap, when set, wraps the variant's reconciler (to count reconciles
	// and their results, say).
	Wrap func(crreconcile.Reconciler) crreconcile.Reconciler
}

// Setup registers the controller of variant on mgr.
func Setup(mgr ctrl.Manager, variant string, o Options) error {
	switch variant {
	case Steady:
		return setupSteady(mgr, o)
	case HandWritten:
		return setupHandWritten(mgr, o)
	case ClusterAPI:
		return setupClusterAPI(mgr, o)
	}
	return fmt.Errorf("operator: unknown variant %q (want one of %s)", variant, strings.Join(Variants, ", "))
}

// newBuilder is the same wiring for every variant: Teams, their three kinds
// of children, and the trigger channel.
func newBuilder(mgr ctrl.Manager, o Options) *builder.Builder {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(o.Name).
		For(&benchv1.Team{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&rbacv1.RoleBinding{}).
		WithOptions(queue(controller.Options{MaxConcurrentReconciles: o.MaxConcurrentReconciles}))
	if o.Trigger != nil {
		b = b.WatchesRawSource(source.Channel(o.Trigger, &handler.EnqueueRequestForObject{}))
	}
	return b
}

// queue sets the work queue of o: the default (the priority queue on
// controller-runtime v0.24) for one worker, the rate-limited queue for
// more. Several workers on v0.24's priority queue can hang the manager's
// stop for its whole grace period (kubernetes-sigs/controller-runtime#3538,
// fixed in v0.25.2; docs/compatibility.md), which the lag setup's 2
// workers met between runs; one worker never meets it. The rate-limited
// queue keeps the priority queue's rate limiter (per-item exponential
// backoff from 5 ms), not its own default, which adds an overall limit of
// 10 requeues a second after a burst of 100: only the queue changes, and
// a variant that requeues often under lag is not throttled for it.
func queue(o controller.Options) controller.Options {
	if o.MaxConcurrentReconciles > 1 {
		o.UsePriorityQueue = ptr.To(false)
		o.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[crreconcile.Request](5*time.Millisecond, 1000*time.Second)
	}
	return o
}

// complete registers r, wrapped by o.Wrap, with the builder of newBuilder.
func complete(mgr ctrl.Manager, o Options, r crreconcile.Reconciler) error {
	if o.Wrap != nil {
		r = o.Wrap(r)
	}
	return newBuilder(mgr, o).Complete(r)
}

// ChildLabels are the labels every child of t carries.
func ChildLabels(t *benchv1.Team) map[string]string {
	return map[string]string{benchv1.TeamLabel: t.Name, benchv1.VariantLabel: t.Labels[benchv1.VariantLabel]}
}

// Role is the ClusterRole t's members are bound to.
func Role(t *benchv1.Team) string {
	if t.Spec.Role == "" {
		return "view"
	}
	return t.Spec.Role
}

// mergeLabels sets want on have, keeping other writers' labels.
func mergeLabels(have, want map[string]string) map[string]string {
	if have == nil {
		have = make(map[string]string, len(want))
	}
	for k, v := range want {
		have[k] = v
	}
	return have
}

// MutateConfigMap sets what t wants on its ConfigMap: the labels and the
// data (members, one a line, and the role).
func MutateConfigMap(t *benchv1.Team, cm *corev1.ConfigMap) {
	cm.Labels = mergeLabels(cm.Labels, ChildLabels(t))
	cm.Data = map[string]string{"members": strings.Join(t.Spec.Members, "\n"), "role": Role(t)}
}

// MutateServiceAccount sets what t wants on its ServiceAccount: the labels.
func MutateServiceAccount(t *benchv1.Team, sa *corev1.ServiceAccount) {
	sa.Labels = mergeLabels(sa.Labels, ChildLabels(t))
}

// MutateRoleBinding sets what t wants on its RoleBinding: the labels, the
// role and the subjects (the Team's ServiceAccount and its members), with
// the API groups the API server would default, so that nothing differs on
// the next read.
func MutateRoleBinding(t *benchv1.Team, rb *rbacv1.RoleBinding) {
	rb.Labels = mergeLabels(rb.Labels, ChildLabels(t))
	rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: Role(t)}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: t.Name, Namespace: t.Namespace}}
	for _, m := range t.Spec.Members {
		subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: m})
	}
	rb.Subjects = subjects
}

// WantsConfigMap reports whether cm is as t wants it (labels, data and
// controller reference), for the benchmark's convergence checks.
func WantsConfigMap(t *benchv1.Team, cm *corev1.ConfigMap) bool {
	want := &corev1.ConfigMap{}
	MutateConfigMap(t, want)
	return controlledBy(t, cm.OwnerReferences) && hasLabels(cm.Labels, want.Labels) &&
		len(cm.Data) == len(want.Data) && cm.Data["members"] == want.Data["members"] && cm.Data["role"] == want.Data["role"]
}

// WantsServiceAccount reports whether sa is as t wants it.
func WantsServiceAccount(t *benchv1.Team, sa *corev1.ServiceAccount) bool {
	return controlledBy(t, sa.OwnerReferences) && hasLabels(sa.Labels, ChildLabels(t))
}

// WantsRoleBinding reports whether rb is as t wants it.
func WantsRoleBinding(t *benchv1.Team, rb *rbacv1.RoleBinding) bool {
	want := &rbacv1.RoleBinding{}
	MutateRoleBinding(t, want)
	return controlledBy(t, rb.OwnerReferences) && hasLabels(rb.Labels, want.Labels) &&
		rb.RoleRef == want.RoleRef && slices.Equal(rb.Subjects, want.Subjects)
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func controlledBy(t *benchv1.Team, refs []metav1.OwnerReference) bool {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			return r.UID == t.UID
		}
	}
	return false
}

// retryable reports whether err only means that a read was stale: a
// conflict, or a create of a child the cache did not show yet.
func retryable(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
}

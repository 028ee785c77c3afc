// Package at is an example operator built with steady: the cnat "At" of
// "Programming Kubernetes" (Hausenblas and Schimanski, O'Reilly 2019, chapter
// 6). An At names a time and a command; at that time the controller runs the
// command once, in a Pod of its own, and reports the At PENDING, RUNNING and
// DONE, as status.phase and as conditions.
//
// The controller never polls: while an At is pending, its reconcile returns
// RequeueAfter the time left, and the Pod's own updates (it is owned by the
// At) wake the controller when the command finishes. A malformed schedule is
// a Stalled condition, returned without an error or a requeue, so a typo costs
// one reconcile, not a retry loop; fixing the spec (a new generation) wakes the
// controller again.
//
// steady does the bookkeeping: reconcile.For reads the At, snapshots it and
// writes what the reconcile changed (status, conditions, observedGeneration)
// in one PATCH, or none; ownership.CreateOrUpdate creates the Pod with the At
// as its controller; conditions marks the whole truth on every pass;
// predicates.GenerationChanged keeps the controller's own status writes from
// waking it.
package at

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steadyk8s/steady"
	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/examples/at/api/v1alpha1"
	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/reconcile"
)

// CRDs holds the At CustomResourceDefinition, for tests and the demo
// (testenv.WithCRDs{FS: at.CRDs, Paths: []string{"config/crd"}}).
//
//go:embed config/crd/*.yaml
var CRDs embed.FS

// AddToScheme registers the At API in a scheme. The controller also needs
// client-go's types (Pods) in it: clientgoscheme.AddToScheme.
func AddToScheme(s *runtime.Scheme) error { return v1alpha1.AddToScheme(s) }

const (
	// DefaultImage runs the command when the At names no image.
	DefaultImage = "busybox:1.37"

	// PodLabel is set on every Pod of an At, to the At's name: main.go
	// restricts the manager's Pod cache to Pods carrying it.
	PodLabel = "cnat.examples.steadyk8s.io/at"

	// ReasonInvalidSchedule is the reason of Stalled for a malformed schedule.
	ReasonInvalidSchedule = "InvalidSchedule"
)

// Reconciler runs each At's command once, at its scheduled time.
type Reconciler struct {
	// Client reads and writes; SetupWithManager defaults it to the manager's
	// (cached) client.
	Client client.Client
	// Now is the clock; nil means time.Now. Tests inject a fake one.
	Now func() time.Time
	// Name names the controller; empty means "at".
	Name string

	reconciler crreconcile.Reconciler
}

// SetupWithManager registers the controller: Ats, and the Pods they own.
// Status writes do not bump the generation: our own writes do not wake us,
// a spec change and the start of a deletion do.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = steady.NewClient(mgr)
	}
	rec, err := reconcile.NewController[v1alpha1.At](mgr, r.reconcile, reconcile.WithObservedGeneration{}).
		Named(cmp.Or(r.Name, "at")).
		Client(r.Client).
		// The Pod's phase changes wake the At that owns it.
		Owns(&corev1.Pod{}).
		Complete()
	r.reconciler = rec
	return err
}

// +kubebuilder:rbac:groups=cnat.examples.steadyk8s.io,resources=ats,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=cnat.examples.steadyk8s.io,resources=ats/status,verbs=get;patch;update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;patch

// Reconcile brings one At a step further. SetupWithManager must have run.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if r.reconciler == nil {
		return ctrl.Result{}, errors.New("at: Reconcile called before SetupWithManager")
	}
	return r.reconciler.Reconcile(ctx, req)
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// PodName is the name of the Pod that runs an At's command.
func PodName(at *v1alpha1.At) string { return at.Name + "-pod" }

// ParseSchedule parses an At's schedule: RFC 3339, or cnat's minute
// precision ("2019-04-12T10:12Z").
func ParseSchedule(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err == nil {
		return t, nil
	}
	if t, err2 := time.Parse("2006-01-02T15:04Z07:00", s); err2 == nil {
		return t, nil
	}
	return time.Time{}, err
}

// reconcile is the body that reconcile.For runs: it changes the At in memory
// (status, conditions) and For writes what changed.
func (r *Reconciler) reconcile(ctx context.Context, at *v1alpha1.At) (ctrl.Result, error) {
	if !at.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the garbage collector takes the Pod
	}
	defer setReady(at)

	// Once the Pod exists, the At is committed: its Pod says where it is.
	pod := &corev1.Pod{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: at.Namespace, Name: PodName(at)}, pod)
	switch {
	case err == nil && metav1.IsControlledBy(pod, at):
		observePod(at, pod)
		return ctrl.Result{}, nil
	case err != nil && !apierrors.IsNotFound(err):
		return ctrl.Result{}, fmt.Errorf("reading Pod %s/%s: %w", at.Namespace, PodName(at), err)
	}
	if at.Status.Phase == v1alpha1.PhaseDone {
		return ctrl.Result{}, nil // ran once; a Pod deleted since does not run again
	}

	when, err := ParseSchedule(at.Spec.Schedule)
	if err != nil {
		// Bad input: no error, no requeue. Only a spec change helps, and
		// it wakes us (a new generation).
		at.Status.Phase = v1alpha1.PhasePending
		conditions.MarkStalled(at, ReasonInvalidSchedule, "schedule %q is not an RFC 3339 time", at.Spec.Schedule)
		conditions.MarkFalse(at, v1alpha1.ConditionScheduled, ReasonInvalidSchedule, "schedule %q is not an RFC 3339 time", at.Spec.Schedule)
		conditions.MarkFalse(at, v1alpha1.ConditionRunning, ReasonInvalidSchedule, "")
		conditions.MarkFalse(at, v1alpha1.ConditionDone, ReasonInvalidSchedule, "")
		return ctrl.Result{}, nil
	}
	conditions.ClearProgress(at)
	conditions.MarkTrue(at, v1alpha1.ConditionScheduled, "Scheduled", "runs at %s", when.UTC().Format(time.RFC3339))

	if wait := when.Sub(r.now()); wait > 0 {
		at.Status.Phase = v1alpha1.PhasePending
		conditions.MarkFalse(at, v1alpha1.ConditionRunning, "Pending", "runs at %s", when.UTC().Format(time.RFC3339))
		conditions.MarkFalse(at, v1alpha1.ConditionDone, "Pending", "runs at %s", when.UTC().Format(time.RFC3339))
		// No polling: come back when it is time.
		return ctrl.Result{RequeueAfter: wait}, nil
	}

	pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: at.Namespace, Name: PodName(at)}}
	_, err = ownership.CreateOrUpdate(ctx, r.Client, at, pod, func() error {
		if pod.CreationTimestamp.IsZero() { // a Pod's spec is immutable: set it at creation only
			pod.Labels = map[string]string{PodLabel: at.Name}
			pod.Spec = podSpec(at)
		}
		return nil
	})
	var owned *ownership.AlreadyOwnedError
	switch {
	case errors.As(err, &owned):
		conditions.MarkStalled(at, "PodNameTaken", "%v", err)
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("creating Pod %s/%s for At %s/%s: %w", pod.Namespace, pod.Name, at.Namespace, at.Name, err)
	}
	observePod(at, pod)
	return ctrl.Result{}, nil
}

// observePod sets the At's phase and conditions from its Pod's phase.
func observePod(at *v1alpha1.At, pod *corev1.Pod) {
	at.Status.PodName = pod.Name
	conditions.ClearProgress(at)
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		at.Status.Phase = v1alpha1.PhaseDone
		conditions.MarkFalse(at, v1alpha1.ConditionRunning, "Completed", "Pod %s %s", pod.Name, pod.Status.Phase)
		reason := string(pod.Status.Phase) // Succeeded or Failed
		conditions.MarkTrue(at, v1alpha1.ConditionDone, reason, "Pod %s %s %s", pod.Name, pod.Status.Phase, pod.Status.Message)
	default:
		at.Status.Phase = v1alpha1.PhaseRunning
		conditions.MarkTrue(at, v1alpha1.ConditionRunning, "PodRunning", "Pod %s is %s", pod.Name, phaseOrPending(pod))
		conditions.MarkFalse(at, v1alpha1.ConditionDone, "Running", "Pod %s is %s", pod.Name, phaseOrPending(pod))
	}
}

func phaseOrPending(pod *corev1.Pod) corev1.PodPhase {
	if pod.Status.Phase == "" {
		return corev1.PodPending
	}
	return pod.Status.Phase
}

// setReady summarizes Stalled and Done into Ready: True once the command ran
// (reason Succeeded or Failed, the Pod's outcome), False while it has not or
// cannot.
func setReady(at *v1alpha1.At) {
	reason := conditions.ReasonSucceeded
	if c := conditions.Get(at, v1alpha1.ConditionDone); c != nil && c.Status == metav1.ConditionTrue {
		reason = c.Reason
	}
	conditions.SetSummary(at, conditions.Ready, conditions.SummaryOptions{
		ConditionTypes:  []string{conditions.Stalled, v1alpha1.ConditionDone},
		IgnoreIfMissing: []string{conditions.Stalled},
		TrueReason:      reason,
	})
}

func podSpec(at *v1alpha1.At) corev1.PodSpec {
	image := at.Spec.Image
	if image == "" {
		image = DefaultImage
	}
	return corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{
			Name:    "command",
			Image:   image,
			Command: []string{"sh", "-c", at.Spec.Command},
		}},
	}
}

package reconcile_test

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// A reconcile of a new generation that fails before its body marked
// anything (the API server down while it lists the children, say) has not
// observed that generation: For must not write status.observedGeneration =
// generation, nor a Ready summary claiming that generation from conditions
// of the previous one. It did: after the spec of a CronJob changed to an
// invalid schedule and the reconcile failed at once, the CronJob said
// observedGeneration 2 and Ready True at generation 2 (from Scheduled of
// generation 1), which kstatus (Flux, cli-utils) reads as "Current".
// The body marks its condition with conditions.MarkTrue, and as
// kubebuilder's scaffold does, with meta.SetStatusCondition, which leaves
// the condition without an observedGeneration: Ready must not claim
// generation 2 from a condition that says no generation either.
func TestFailedReconcileDoesNotObserveTheGeneration(t *testing.T) {
	env.Require(t)
	for _, tc := range []struct {
		name string
		mark func(w *testapi.Widget)
	}{
		{"conditions.MarkTrue", func(w *testapi.Widget) { conditions.MarkTrue(w, "Scheduled", "Scheduled", "") }},
		{"meta.SetStatusCondition", func(w *testapi.Widget) {
			meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: "Scheduled", Status: metav1.ConditionTrue, Reason: "Scheduled"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { failedReconcileDoesNotObserveTheGeneration(t, tc.mark) })
	}
}

func failedReconcileDoesNotObserveTheGeneration(t *testing.T, mark func(w *testapi.Widget)) {
	ctx := context.Background()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
	must(t, env.Client.Create(ctx, w))
	var fail error
	r, err := reconcile.For(env.Client, func(ctx context.Context, w *testapi.Widget) (ctrl.Result, error) {
		if fail != nil {
			return ctrl.Result{}, fail
		}
		mark(w)
		return ctrl.Result{}, nil
	}, reconcile.WithObservedGeneration{},
		reconcile.WithReadySummary(conditions.SummaryOptions{ConditionTypes: []string{"Scheduled"}}))
	must(t, err)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	w = get(t, w)
	w.Spec.Size = 3
	must(t, env.Client.Update(ctx, w))

	fail = errors.New("listing the children: connection refused")
	if _, err := r.Reconcile(ctx, req); !errors.Is(err, fail) {
		t.Fatalf("reconcile = %v, want the body's error", err)
	}
	got := get(t, w)
	if got.Generation != 2 {
		t.Fatalf("generation %d", got.Generation)
	}
	if got.Status.ObservedGeneration != 1 {
		t.Errorf("status.observedGeneration %d after the reconcile of generation 2 failed; want 1", got.Status.ObservedGeneration)
	}
	if ready := conditions.Get(got, conditions.Ready); ready == nil || ready.ObservedGeneration != 1 {
		t.Errorf("Ready %+v after the reconcile of generation 2 failed, from Scheduled %+v; want it at generation 1",
			ready, conditions.Get(got, "Scheduled"))
	}

	// A failed reconcile that marked its conditions (the documented
	// MarkFalse-then-return-the-error) observed the generation in them:
	// Ready says so, at generation 2; status.observedGeneration waits for
	// a reconcile that succeeds.
	fail = errors.New("creating the child: quota exceeded")
	r2, err := reconcile.For(env.Client, func(ctx context.Context, w *testapi.Widget) (ctrl.Result, error) {
		conditions.MarkFalse(w, "Scheduled", "CreateFailed", "%v", fail)
		return ctrl.Result{}, fail
	}, reconcile.WithObservedGeneration{},
		reconcile.WithReadySummary(conditions.SummaryOptions{ConditionTypes: []string{"Scheduled"}}))
	must(t, err)
	if _, err := r2.Reconcile(ctx, req); !errors.Is(err, fail) {
		t.Fatalf("reconcile = %v, want the body's error", err)
	}
	got = get(t, w)
	if ready := conditions.Get(got, conditions.Ready); ready == nil || ready.Status != metav1.ConditionFalse || ready.ObservedGeneration != 2 {
		t.Errorf("Ready %+v; want False at generation 2", ready)
	}
	if got.Status.ObservedGeneration != 1 {
		t.Errorf("status.observedGeneration %d after a failed reconcile; want 1", got.Status.ObservedGeneration)
	}

	// The next reconcile that succeeds observes generation 2.
	fail = nil
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	got = get(t, w)
	if ready := conditions.Get(got, conditions.Ready); got.Status.ObservedGeneration != 2 || ready.ObservedGeneration != 2 || ready.Status != metav1.ConditionTrue {
		t.Errorf("after a successful reconcile: status.observedGeneration %d, Ready %+v; want both at 2, True", got.Status.ObservedGeneration, ready)
	}
}

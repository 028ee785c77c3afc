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

// TestFailedReconcileDoesNotObserveTheGeneration with conditions set as
// kubebuilder's scaffold sets them (meta.SetStatusCondition, without an
// observedGeneration): a reconcile of generation 2 that fails before
// marking anything must not leave Ready claiming generation 2 from a
// condition that says no generation (WithReadySummary: "Ready claims no
// generation the conditions it summarizes did not observe").
func TestFailedReconcileWithGenerationlessConditionsDoesNotObserveTheGeneration(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
	must(t, env.Client.Create(ctx, w))
	var fail error
	r, err := reconcile.For(env.Client, func(ctx context.Context, w *testapi.Widget) (ctrl.Result, error) {
		if fail != nil {
			return ctrl.Result{}, fail
		}
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: "Scheduled", Status: metav1.ConditionTrue, Reason: "Scheduled"})
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
	if ready := conditions.Get(got, conditions.Ready); ready == nil || ready.ObservedGeneration != 1 {
		t.Errorf("Ready %+v after the reconcile of generation 2 failed, from Scheduled %+v; want it at generation 1",
			ready, conditions.Get(got, "Scheduled"))
	}
}

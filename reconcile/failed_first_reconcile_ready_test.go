package reconcile_test

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// The first reconcile of an object fails before its body marked anything,
// with WithReadySummary's defaults (every condition on the object): there
// is no condition to summarize, and the summary is True, "Succeeded", at
// the object's generation, while status.observedGeneration, which a failed
// reconcile no longer writes, is absent: kstatus (which reads a missing
// observedGeneration as no claim) takes the object for Current. A failed
// body observed nothing: Ready must not claim success at a generation no
// condition observed.
func TestAFirstReconcileThatFailsIsNotReady(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
	must(t, env.Client.Create(ctx, w))
	fail := errors.New("listing the children: connection refused")
	r, err := reconcile.For(env.Client, func(ctx context.Context, w *testapi.Widget) (ctrl.Result, error) {
		return ctrl.Result{}, fail
	}, reconcile.WithObservedGeneration{}, reconcile.WithReadySummary())
	must(t, err)
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}); !errors.Is(err, fail) {
		t.Fatalf("reconcile = %v, want the body's error", err)
	}
	got := get(t, w)
	if ready := conditions.Get(got, conditions.Ready); ready != nil && ready.Status == metav1.ConditionTrue {
		t.Errorf("Ready %+v (status.observedGeneration %d) after the only reconcile failed", ready, got.Status.ObservedGeneration)
	}
}

// A reconcile that failed after marking its condition True does not make
// Ready True: Ready False from the last reconcile that ended stays, with
// its reason, while the condition the body marked is written.
func TestAFailedReconcileDoesNotMakeReadyTrue(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
	must(t, env.Client.Create(ctx, w))
	fail := errors.New("creating the second child: connection refused")
	failing := false
	r, err := reconcile.For(env.Client, func(ctx context.Context, w *testapi.Widget) (ctrl.Result, error) {
		if !failing {
			conditions.MarkFalse(w, "ChildReady", "Pending", "waiting for the child")
			return ctrl.Result{}, nil
		}
		conditions.MarkTrue(w, "ChildReady", "Created", "")
		return ctrl.Result{}, fail
	}, reconcile.WithReadySummary())
	must(t, err)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if ready := conditions.Get(get(t, w), conditions.Ready); ready == nil || ready.Status != metav1.ConditionFalse {
		t.Fatalf("Ready %+v after a reconcile that found the child pending, want False", ready)
	}
	failing = true
	if _, err := r.Reconcile(ctx, req); !errors.Is(err, fail) {
		t.Fatalf("reconcile = %v, want the body's error", err)
	}
	got := get(t, w)
	if c := conditions.Get(got, "ChildReady"); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("ChildReady %+v, want the body's True written", c)
	}
	if ready := conditions.Get(got, conditions.Ready); ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != "Pending" {
		t.Errorf("Ready %+v after a failed reconcile, want False, Pending, as it was", ready)
	}
}

package reconcile_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// A live observedGeneration above the object's generation observed no
// generation of this object: a status restored from a backup onto the
// object recreated at generation 1, a manifest exported with its status
// and created again (a kind without status subresource takes status on
// create). It is no newer observation than ours: the reconcile writes its
// status (it used to be refused as stale on every reconcile, For
// requeueing every 100 ms for ever, until the generation passed the
// restored number).
func TestObservedGenerationAboveTheGenerationIsNoNewerObservation(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	t.Run("status subresource, through For", func(t *testing.T) {
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
		must(t, env.Client.Create(ctx, w))
		w.Status.ObservedGeneration = 7 // restored
		w.Status.Conditions = []metav1.Condition{{Type: conditions.Ready, Status: metav1.ConditionFalse, Reason: "Restored",
			ObservedGeneration: 7, LastTransitionTime: metav1.Now()}}
		must(t, env.Client.Status().Update(ctx, w))
		r, err := reconcile.For(env.Client, func(ctx context.Context, w *testapi.Widget) (ctrl.Result, error) {
			conditions.MarkTrue(w, conditions.Ready, "Done", "")
			return ctrl.Result{}, nil
		}, reconcile.WithObservedGeneration{})
		must(t, err)
		for range 3 {
			res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)})
			if err != nil || res.RequeueAfter != 0 {
				t.Errorf("reconcile = %+v, %v; want done", res, err)
			}
		}
		got := get(t, w)
		if r := conditions.Get(got, conditions.Ready); got.Status.ObservedGeneration != 1 || r.Status != metav1.ConditionTrue || r.ObservedGeneration != 1 {
			t.Errorf("generation %d: status.observedGeneration %d, Ready %+v; want both at 1, True", got.Generation, got.Status.ObservedGeneration, r)
		}
	})
	t.Run("no status subresource", func(t *testing.T) {
		base := newUnstructured("PlainThing", env.Namespace(t), "p")
		base.Object["status"] = map[string]any{"observedGeneration": int64(5), "phase": "Restored"}
		u := createU(t, base)
		if u.GetGeneration() != 1 {
			t.Fatalf("generation %d", u.GetGeneration())
		}
		p, err := reconcile.NewPatcher(env.Client, u)
		must(t, err)
		must(t, unstructured.SetNestedField(u.Object, "Running", "status", "phase"))
		if err := p.Patch(ctx, u, reconcile.WithObservedGeneration{}); err != nil {
			t.Fatalf("Patch = %v", err)
		}
		got := getU(t, u)
		og, _, _ := unstructured.NestedInt64(got.Object, "status", "observedGeneration")
		phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
		if phase != "Running" || og != got.GetGeneration() {
			t.Errorf("phase %q, observedGeneration %d at generation %d", phase, og, got.GetGeneration())
		}
	})
}

// A condition that claims no generation (set without observedGeneration,
// as meta.SetStatusCondition does unless told) is not older than a live one
// that claims one: it is written. It used to be refused as stale on every
// reconcile, even from a fresh read, so a controller that does not stamp
// its conditions could never again write a condition another writer (or
// its own earlier version) had stamped.
func TestConditionWithoutObservedGenerationIsNotOlder(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	w, c, _ := fixture(t) // Synced, stamped with generation 1 by conditions.MarkTrue
	if s := conditions.Get(w, "Synced"); s.ObservedGeneration != 1 {
		t.Fatalf("setup: Synced %+v", s)
	}
	p, err := reconcile.NewPatcher(c, w)
	must(t, err)
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: "Synced", Status: metav1.ConditionTrue, Reason: "Done", Message: "again"})
	if err := p.Patch(ctx, w); err != nil {
		t.Fatalf("Patch = %v", err)
	}
	if s := conditions.Get(get(t, w), "Synced"); s.Message != "again" {
		t.Errorf("Synced %+v: not written", s)
	}
}

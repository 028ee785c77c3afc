package reconcile_test

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// TestFailedReconcileDoesNotObserveTheGeneration through PatchOnExit, the
// For-less pattern docs/reconcile.md shows (defer p.PatchOnExit(ctx, b,
// &res, &reterr, reconcile.WithObservedGeneration{})): a reconcile of
// generation 2 that returns an error has not observed it, and
// status.observedGeneration stays 1, as with For (and as cluster-api's
// patch helper is used: WithStatusObservedGeneration only when reterr is
// nil).
func TestPatchOnExitOfAFailedReconcileDoesNotObserveTheGeneration(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
	must(t, env.Client.Create(ctx, w))
	reconcileOnce := func(fail error) (res ctrl.Result, reterr error) {
		obj := get(t, w)
		p, err := reconcile.NewPatcher(env.Client, obj)
		if err != nil {
			return ctrl.Result{}, err
		}
		defer p.PatchOnExit(ctx, obj, &res, &reterr, reconcile.WithObservedGeneration{})
		obj.Status.Phase = "Reconciled"
		return ctrl.Result{}, fail
	}
	if _, err := reconcileOnce(nil); err != nil {
		t.Fatal(err)
	}
	w = get(t, w)
	w.Spec.Size = 3
	must(t, env.Client.Update(ctx, w))
	fail := errors.New("listing the children: connection refused")
	if _, err := reconcileOnce(fail); !errors.Is(err, fail) {
		t.Fatalf("reconcile = %v, want the body's error", err)
	}
	if got := get(t, w); got.Generation != 2 || got.Status.ObservedGeneration != 1 {
		t.Errorf("generation %d, status.observedGeneration %d after the reconcile of generation 2 failed; want 1", got.Generation, got.Status.ObservedGeneration)
	}
}

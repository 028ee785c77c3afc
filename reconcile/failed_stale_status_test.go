package reconcile_test

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// WithObservedGeneration guards the status: one computed from a generation
// older than the live status.observedGeneration is not written
// (docs/reconcile.md; internal/patch: "a status computed from a generation
// lower than the live status.observedGeneration is not written"). A body
// that failed on a read older than another writer's status of a newer
// generation (another instance of the controller, before a leader
// handover) must not write its status of the past over it either: For's
// failed body turns WithObservedGeneration off for its Patch, and the guard
// with it.
func TestAFailedReconcileOfAnOldReadDoesNotWriteThePast(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
	must(t, env.Client.Create(ctx, w))
	stale := get(t, w) // generation 1, as a lagging cache still shows it
	w = get(t, w)
	w.Spec.Size = 3
	must(t, env.Client.Update(ctx, w)) // generation 2
	w = get(t, w)
	w.Status.ObservedGeneration, w.Status.Phase = 2, "Running at 2"
	must(t, env.Client.Status().Update(ctx, w))

	ww, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	must(t, err)
	served := false
	lagging := interceptor.NewClient(ww, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if out, ok := obj.(*testapi.Widget); ok && key == client.ObjectKeyFromObject(stale) && !served {
				served = true // once: For's read; the Patcher's re-reads are live
				*out = *stale.DeepCopyObject().(*testapi.Widget)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	fail := errors.New("creating the child: quota exceeded")
	r, err := reconcile.For(lagging, func(ctx context.Context, w *testapi.Widget) (ctrl.Result, error) {
		w.Status.Phase = "Failing at 1"
		return ctrl.Result{}, fail
	}, reconcile.WithObservedGeneration{})
	must(t, err)
	res, rerr := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)})
	t.Logf("reconcile: %+v, %v", res, rerr)
	if got := get(t, w); got.Status.Phase != "Running at 2" {
		t.Errorf("status.phase %q (observedGeneration %d): a failed reconcile of generation 1 wrote over the status of generation 2", got.Status.Phase, got.Status.ObservedGeneration)
	}
}

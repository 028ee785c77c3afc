package reconcile_test

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/finalizer"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// A controller of a kind it shares finalizes only the objects it selects
// (finalizer.When): a red Widget gets no finalizer; a blue one gets it; one
// turned red again has its cleanup run and the finalizer removed, and the
// body runs each time.
func TestForFinalizesOnlyWhatItSelects(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	const fin = "test.steady.dev/ip"
	cleanups, bodies := 0, 0
	r, err := reconcile.For(env.Client, func(ctx context.Context, w *testapi.Widget) (ctrl.Result, error) {
		bodies++
		return ctrl.Result{}, nil
	}, reconcile.WithFinalizer(fin, finalizer.Func(func(context.Context, client.Object) error {
		cleanups++
		return nil
	}), finalizer.When(func(o client.Object) bool { return o.(*testapi.Widget).Spec.Color == "blue" })))
	must(t, err)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}, Spec: testapi.WidgetSpec{Color: "red"}}
	must(t, env.Client.Create(ctx, w))
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}
	step := func(color string, wantFinalizer bool, wantCleanups int) {
		t.Helper()
		got := get(t, w)
		if got.Spec.Color != color {
			got.Spec.Color = color
			must(t, env.Client.Update(ctx, got))
		}
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatalf("%s: %v", color, err)
		}
		got = get(t, w)
		if slices.Contains(got.Finalizers, fin) != wantFinalizer || cleanups != wantCleanups {
			t.Errorf("%s: finalizers %v, cleanups %d; want finalizer %v, cleanups %d", color, got.Finalizers, cleanups, wantFinalizer, wantCleanups)
		}
	}
	step("red", false, 0)
	step("blue", true, 0)
	step("red", false, 1)
	step("blue", true, 1)
	if bodies != 4 {
		t.Errorf("the body ran %d times, want 4", bodies)
	}
	must(t, env.Client.Delete(ctx, get(t, w)))
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if cleanups != 2 {
		t.Errorf("deletion: cleanups %d, want 2", cleanups)
	}
}

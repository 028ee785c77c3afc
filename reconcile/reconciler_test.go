package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/cachewait"
	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/finalizer"
	"github.com/steadyk8s/steady/internal/object"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// Item 14: a cache wait that times out is a requeue, not an error.
func TestForMapsACacheTimeoutToARequeue(t *testing.T) {
	env.Require(t)
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 300 * time.Millisecond, Informers: []client.Object{&testapi.Widget{}}})
	ctx := context.Background()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}, Spec: testapi.WidgetSpec{Size: 1}}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	waitCached(t, cc.Client, w, w.ResourceVersion)
	r, _ := reconcile.For(cc.Client, func(ctx context.Context, obj *testapi.Widget) (ctrl.Result, error) {
		obj.Status.Phase = "Changed"
		return ctrl.Result{}, nil
	}, reconcile.WithCacheWait{Options: []cachewait.WaitOption{cachewait.WithTimeout(time.Millisecond)}})
	res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)})
	if err != nil || res.RequeueAfter != reconcile.CacheTimeoutRequeue {
		t.Errorf("Reconcile = %+v, %v; want a RequeueAfter and no error", res, err)
	}
	if get(t, w).Status.Phase != "Changed" {
		t.Error("the write was lost")
	}
}

func TestForRunsTheWholeRoutine(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n, err := testapi.NewCountingClient(env.Config, env.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	var cleanups int
	cleanupErr := errors.New("bucket not empty")
	failCleanup := true
	r, err := reconcile.For(c, func(ctx context.Context, w *testapi.Widget) (ctrl.Result, error) {
		conditions.MarkTrue(w, "Synced", "Done", "size %d", w.Spec.Size)
		w.Status.Phase = "Running"
		return ctrl.Result{}, nil
	},
		reconcile.WithFinalizer("test.steady.dev/external", finalizer.Func(func(context.Context, client.Object) error {
			cleanups++
			if failCleanup {
				return cleanupErr
			}
			return nil
		})),
		reconcile.WithReadySummary(conditions.SummaryOptions{ConditionTypes: []string{"Synced"}}),
		reconcile.WithObservedGeneration{},
	)
	if err != nil {
		t.Fatal(err)
	}
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}, Spec: testapi.WidgetSpec{Size: 2}}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}

	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	got := get(t, w)
	if !controllerutil.ContainsFinalizer(got, "test.steady.dev/external") || !conditions.IsTrue(got, conditions.Ready) ||
		got.Status.Phase != "Running" || got.Status.ObservedGeneration != got.Generation {
		t.Fatalf("after the first reconcile: %+v", got)
	}

	n.Reset()
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if n.Writes() != 0 || n.Get("GET") != 1 {
		t.Errorf("a no-op reconcile made requests: %s, want one GET", n)
	}

	if err := c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, req); !errors.Is(err, cleanupErr) {
		t.Fatalf("reconcile with a failing cleanup = %v", err)
	}
	if got := get(t, w); !controllerutil.ContainsFinalizer(got, "test.steady.dev/external") {
		t.Fatal("the finalizer went although its cleanup failed")
	}
	failCleanup = false
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, req.NamespacedName, &testapi.Widget{}); !apierrors.IsNotFound(err) {
		t.Fatalf("object after a successful cleanup: %v", err)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Errorf("reconcile of a missing object = %v", err)
	}
	if cleanups != 2 {
		t.Errorf("cleanups = %d, want 2", cleanups)
	}
}

func TestForRefusesBadOptions(t *testing.T) {
	env.Require(t)
	fn := func(context.Context, *corev1.ConfigMap) (ctrl.Result, error) { return ctrl.Result{}, nil }
	if _, err := reconcile.For(env.Client, fn, reconcile.WithReadySummary()); err == nil {
		t.Error("a Ready summary on an object without conditions was accepted")
	}
	var ne *object.FinalizerNameError
	if _, err := reconcile.For(env.Client, fn, reconcile.WithFinalizer("bad name", finalizer.Func(nil))); !errors.As(err, &ne) || ne.Finalizer != "bad name" {
		t.Errorf("an invalid finalizer name: %v; want an invalid-name error", err)
	}
}

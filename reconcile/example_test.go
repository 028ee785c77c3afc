package reconcile_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// exampleWidget creates a Widget in a fresh namespace of the test control
// plane and returns it as read.
func exampleWidget() *testapi.Widget {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "example-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		panic(err)
	}
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "w"}, Spec: testapi.WidgetSpec{Size: 1}}
	if err := env.Client.Create(ctx, w); err != nil {
		panic(err)
	}
	return w
}

// Snapshot, change, patch: the second reconcile, which marks the same
// state, writes nothing.
func ExamplePatcher_Patch() {
	ctx := context.Background()
	c, requests, _ := testapi.NewCountingClient(env.Config, env.Scheme)
	w := exampleWidget()

	reconcileOnce := func() {
		obj := &testapi.Widget{}
		_ = c.Get(ctx, client.ObjectKeyFromObject(w), obj)
		p, _ := reconcile.NewPatcher(c, obj)
		conditions.MarkTrue(obj, conditions.Ready, "Provisioned", "size %d", obj.Spec.Size)
		obj.Status.Phase = "Running"
		if err := p.Patch(ctx, obj, reconcile.WithObservedGeneration{}); err != nil {
			fmt.Println(err)
		}
	}
	requests.Reset()
	reconcileOnce()
	fmt.Println("first:", requests)
	requests.Reset()
	reconcileOnce()
	fmt.Println("second:", requests)
	// Output:
	// first: GET=1 PATCH=1
	// second: GET=1
}

// For wraps the routine into a controller-runtime Reconciler.
func ExampleFor() {
	ctx := context.Background()
	w := exampleWidget()
	r, err := reconcile.For(env.Client, func(ctx context.Context, obj *testapi.Widget) (ctrl.Result, error) {
		conditions.MarkTrue(obj, "Synced", "Applied", "")
		return ctrl.Result{}, nil
	}, reconcile.WithReadySummary(conditions.ForConditionTypes{"Synced"}))
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}); err != nil {
		fmt.Println(err)
		return
	}
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(w), w)
	ready := conditions.Get(w, conditions.Ready)
	fmt.Println(ready.Status, ready.Reason)
	// Output: True Succeeded
}

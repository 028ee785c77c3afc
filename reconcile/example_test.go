package reconcile_test

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadyk8s/steady"
	"github.com/steadyk8s/steady/finalizer"
	"github.com/steadyk8s/steady/reconcile"
)

// countingClient is a fake client (use your manager's client instead) that
// counts the PATCH requests.
func countingClient(objs ...client.Object) (client.Client, *int) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	patches := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(objs...).Build()
	return interceptor.NewClient(c, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			patches++
			return c.Patch(ctx, obj, patch, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			patches++
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}), &patches
}

// Snapshot, change, patch: status and spec go out in two PATCHes, and the
// second reconcile, which sets the same state, writes nothing.
func ExamplePatcher_Patch() {
	ctx := context.Background()
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	c, patches := countingClient(web)

	reconcileOnce := func() {
		obj := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, obj); err != nil {
			fmt.Println(err)
			return
		}
		p, err := reconcile.NewPatcher(c, obj)
		if err != nil {
			fmt.Println(err)
			return
		}
		obj.Spec.Replicas = ptr.To[int32](3)
		obj.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "Scaled"}}
		if err := p.Patch(ctx, obj); err != nil {
			fmt.Println(err)
		}
	}
	*patches = 0
	reconcileOnce()
	fmt.Println("first reconcile, PATCHes:", *patches)
	*patches = 0
	reconcileOnce()
	fmt.Println("second reconcile, PATCHes:", *patches)
	// Output:
	// first reconcile, PATCHes: 2
	// second reconcile, PATCHes: 0
}

// A Patcher can write more than once: Reconciling early, the result at
// the end.
func ExamplePatcher_Patch_twice() {
	ctx := context.Background()
	c, patches := countingClient(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "config"}})
	cm := &corev1.ConfigMap{}
	_ = c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "config"}, cm)
	p, _ := reconcile.NewPatcher(c, cm)

	cm.Annotations = map[string]string{"example.com/state": "reconciling"}
	if err := p.Patch(ctx, cm, reconcile.WithOptimisticLock{}); err != nil {
		fmt.Println(err)
	}
	cm.Annotations["example.com/state"] = "done"
	cm.Data = map[string]string{"key": "value"}
	if err := p.Patch(ctx, cm, reconcile.WithOptimisticLock{}); err != nil {
		fmt.Println(err)
	}
	fmt.Println(*patches, cm.Annotations["example.com/state"], cm.Data["key"])
	// Output: 2 done value
}

// For wraps the routine into a controller-runtime Reconciler: read,
// finalizers, the body, one deferred Patch.
func ExampleFor() {
	ctx := context.Background()
	c, _ := countingClient(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "config"}})
	r, err := reconcile.For(c, func(ctx context.Context, cm *corev1.ConfigMap) (ctrl.Result, error) {
		cm.Data = map[string]string{"greeting": "hello"}
		return ctrl.Result{}, nil
	},
		reconcile.WithFinalizer("example.com/cleanup", finalizer.Func(func(context.Context, client.Object) error { return nil })),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	req := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "shop", Name: "config"}}
	if _, err := r.Reconcile(ctx, req); err != nil {
		fmt.Println(err)
		return
	}
	got := &corev1.ConfigMap{}
	_ = c.Get(ctx, req.NamespacedName, got)
	fmt.Println(got.Finalizers, got.Data["greeting"])
	// Output: [example.com/cleanup] hello
}

// With a manager, give For steady.NewClient(mgr): the manager's cached
// client carrying its API reader, so that re-reads after a conflict see the
// API server, not the (lagging) cache.
func ExampleFor_manager() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		panic(err)
	}
	r, err := reconcile.For(steady.NewClient(mgr), func(ctx context.Context, cm *corev1.ConfigMap) (ctrl.Result, error) {
		cm.Labels = map[string]string{"reconciled": "true"}
		return ctrl.Result{}, nil
	})
	if err != nil {
		panic(err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(r); err != nil {
		panic(err)
	}
	_ = mgr.Start(ctrl.SetupSignalHandler())
}

// The cluster-api shape, a Patcher and a deferred PatchOnExit, with named
// results: given &res, PatchOnExit makes a snapshot found stale (nothing
// written) a quiet requeue in res, as For does, instead of an error that
// controller-runtime logs as "Reconciler error" and backs off on.
func ExamplePatcher_PatchOnExit() {
	type ConfigReconciler struct{ client.Client }
	reconcileConfig := func(ctx context.Context, r *ConfigReconciler, req ctrl.Request) (res ctrl.Result, reterr error) {
		cm := &corev1.ConfigMap{}
		if err := r.Get(ctx, req.NamespacedName, cm); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		p, err := reconcile.NewPatcher(r.Client, cm)
		if err != nil {
			return ctrl.Result{}, err
		}
		defer p.PatchOnExit(ctx, cm, &res, &reterr)
		cm.Data = map[string]string{"greeting": "hello"}
		return ctrl.Result{}, nil
	}
	c, _ := countingClient(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "config"}})
	res, err := reconcileConfig(context.Background(), &ConfigReconciler{c}, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "shop", Name: "config"}})
	fmt.Println(res.RequeueAfter, err)
	// Output: 0s <nil>
}

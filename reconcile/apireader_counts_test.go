package reconcile_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/finalizer"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/reconcile"
)

// TestForBodyOwnershipCostsNoGETOnTheCommonPath: review of For handing its
// API reader to the body's ownership calls. Through a manager's cached
// client (watch events held back 300 ms) and its API reader, a For body
// that makes two children (CreateOrUpdate, Apply) reads no
// object from the API server on the common paths: the first reconcile
// (the finalizer's persist and new children), a converged one, one that
// changes every child. Only the conflicts the change is about may cost
// GETs (a reconcile before the cache shows the children it created: each
// create is refused AlreadyExists and the child read with one GET).
func TestForBodyOwnershipCostsNoGETOnTheCommonPath(t *testing.T) {
	env.Require(t)
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 300 * time.Millisecond,
		Informers: []client.Object{&testapi.Widget{}, &corev1.ConfigMap{}}})
	ctx := context.Background()
	ns := env.Namespace(t)
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "counted"}, Spec: testapi.WidgetSpec{Size: 1}}
	if err := env.Client.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	body := func(ctx context.Context, w *testapi.Widget) (ctrl.Result, error) {
		v := fmt.Sprint(w.Spec.Size)
		cou := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name + "-cou"}}
		if _, err := ownership.CreateOrUpdate(ctx, cc.Client, w, cou, func() error { cou.Data = map[string]string{"size": v}; return nil }); err != nil {
			return ctrl.Result{}, err
		}
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name + "-apply"}, Data: map[string]string{"size": v}}
		_, err := applyObject(ctx, cc.Client, w, cm, "review7")
		return ctrl.Result{}, err
	}
	r, err := reconcile.For(cc.Client, body,
		reconcile.WithFinalizer("review7.steady.dev/f", finalizer.Func(func(context.Context, client.Object) error { return nil })))
	if err != nil {
		t.Fatal(err)
	}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(owner)}
	waitChildren := func(size string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for _, name := range []string{"cou", "apply"} {
			for {
				cm := &corev1.ConfigMap{}
				err := cc.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: owner.Name + "-" + name}, cm)
				if err == nil && cm.Data["size"] == size {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the cache never showed %s at size %s", name, size)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	run := func(what string) {
		t.Helper()
		live := &testapi.Widget{}
		if err := env.Client.Get(ctx, req.NamespacedName, live); err != nil {
			t.Fatal(err)
		}
		waitCached(t, cc.Client, live, live.ResourceVersion)
		cc.Counter.Reset()
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("%s: %s", what, cc.Counter.String())
		if got := cc.Counter.Get("GET"); got != 0 {
			t.Errorf("%s: %d GETs from the API server, want 0 (%s)", what, got, cc.Counter.String())
		}
	}
	run("the finalizer's persist and new children")
	waitChildren("1")
	run("converged children")
	live := &testapi.Widget{}
	if err := env.Client.Get(ctx, req.NamespacedName, live); err != nil {
		t.Fatal(err)
	}
	live.Spec.Size = 2
	if err := env.Client.Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	run("every child changed")
	waitChildren("2")
	run("converged again")
}

// applyObject is ownership.Apply of obj whole (see testapi.ConfigurationOf);
// the answer is read back into obj.
func applyObject(ctx context.Context, c client.Client, owner, obj client.Object, fieldManager string, opts ...ownership.ApplyOption) (controllerutil.OperationResult, error) {
	config, back, err := testapi.ConfigurationOf(obj, c.Scheme())
	if err != nil {
		return controllerutil.OperationResultNone, err
	}
	op, err := ownership.Apply(ctx, c, owner, config, fieldManager, opts...)
	if berr := back(); berr != nil && err == nil {
		err = berr
	}
	return op, err
}

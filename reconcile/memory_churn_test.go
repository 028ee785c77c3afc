package reconcile_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/scope"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
	"github.com/steadyk8s/steady/testenv"
)

// cacheHolds waits until cc's cache holds want objects of list's kind in
// ns (not counting the namespace's kube-root-ca.crt ConfigMap).
func cacheHolds(t *testing.T, cc *testapi.Cached, list client.ObjectList, ns string, want int) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("the cache holds %d %T items", want, list), func() error {
		if err := cc.Manager.GetClient().List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return err
		}
		got := 0
		items, _ := metaItems(list)
		for _, o := range items {
			if o.GetName() != "kube-root-ca.crt" {
				got++
			}
		}
		if got != want {
			return fmt.Errorf("%d in the cache", got)
		}
		return nil
	})
}

func metaItems(list client.ObjectList) ([]client.Object, error) {
	var out []client.Object
	switch l := list.(type) {
	case *testapi.WidgetList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.ConfigMapList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	default:
		return nil, fmt.Errorf("%T", list)
	}
	return out, nil
}

// TestForOwnMemoryEndsWithWhatItWrote: For given a client that carries no
// memory (the manager's GetClient() itself) keeps a ledger of its own,
// which its reads end (For reads every object it reconciles, a deleted one
// as not found). The body writes a child through a Patcher of that same
// client: the child's write must not enter a ledger that no read of For
// ever ends. N owners each write a child; children and owners are deleted,
// the cache shows them gone, each owner is reconciled once more (not
// found): For's memory is back to empty.
func TestForOwnMemoryEndsWithWhatItWrote(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Informers: []client.Object{&testapi.Widget{}, &corev1.ConfigMap{}}})
	ns := env.Namespace(t)
	plain := cc.Manager.GetClient()
	var st atomic.Pointer[scope.State]
	r, err := reconcile.For(plain, func(ctx context.Context, w *testapi.Widget) (ctrl.Result, error) {
		st.Store(scope.Of(ctx, plain))
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name + "-child"}}
		if err := plain.Get(ctx, client.ObjectKeyFromObject(cm), cm); apierrors.IsNotFound(err) {
			if err := plain.Create(ctx, cm); err != nil {
				return ctrl.Result{}, err
			}
		} else if err != nil {
			return ctrl.Result{}, err
		}
		p, err := reconcile.NewPatcher(plain, cm)
		if err != nil {
			return ctrl.Result{}, err
		}
		cm.Data = map[string]string{"owner": string(w.UID)}
		return ctrl.Result{}, p.Patch(ctx, cm)
	})
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
	for i := range n {
		if err := env.Client.Create(ctx, &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("w-", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	cacheHolds(t, cc, &testapi.WidgetList{}, ns, n)
	reconcileAll := func() {
		t.Helper()
		for i := range n {
			if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: fmt.Sprint("w-", i)}}); err != nil {
				t.Fatalf("w-%d: %v", i, err)
			}
		}
	}
	reconcileAll()
	s := st.Load()
	if s == nil {
		t.Fatal("the body saw no State in its context")
	}
	for i := range n {
		var cm corev1.ConfigMap
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprint("w-", i, "-child")}, &cm); err != nil || cm.Data["owner"] == "" {
			t.Fatalf("child %d: %v, %v", i, err, cm.Data)
		}
	}
	t.Logf("after the writes: For's memory holds %d objects", s.Len())
	if err := env.Client.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.DeleteAllOf(ctx, &testapi.Widget{}, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	cacheHolds(t, cc, &corev1.ConfigMapList{}, ns, 0)
	cacheHolds(t, cc, &testapi.WidgetList{}, ns, 0)
	reconcileAll() // each owner read as not found
	if got := s.Len(); got != 0 {
		t.Errorf("For's own memory holds %d objects after every object it wrote was deleted, shown gone and its owner reconciled; want 0", got)
	}
}

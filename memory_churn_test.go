package steady_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady"
	"github.com/steadyk8s/steady/finalizer"
	"github.com/steadyk8s/steady/internal/scope"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/reconcile"
	"github.com/steadyk8s/steady/testenv"
)

// cacheCount is the number of objects of list's kind m's cache holds in
// ns, the namespace's kube-root-ca.crt ConfigMap not counted.
func cacheCount(ctx context.Context, m *testapi.Cached, list client.ObjectList, ns string) (int, error) {
	if err := m.Manager.GetClient().List(ctx, list, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	switch l := list.(type) {
	case *corev1.ConfigMapList:
		n := 0
		for _, cm := range l.Items {
			if cm.Name != "kube-root-ca.crt" {
				n++
			}
		}
		return n, nil
	case *testapi.WidgetList:
		return len(l.Items), nil
	}
	return 0, fmt.Errorf("%T", list)
}

// churnReconciler is a For reconciler of Widgets through c, with a
// finalizer, whose body writes two children of each owner (CreateOrUpdate
// and Apply of a ConfigMap) and the owner's status: every kind of entry
// steady's memory holds (the ledger of For's, the Patcher's and the
// finalizer handler's writes; CreateOrUpdate's verdicts; Apply's answers).
func churnReconciler(t *testing.T, c client.Client) func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	t.Helper()
	r, err := reconcile.For(c, func(ctx context.Context, w *testapi.Widget) (ctrl.Result, error) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name + "-cou"}}
		if _, err := ownership.CreateOrUpdate(ctx, c, w, cm, func() error {
			cm.Data = map[string]string{"size": fmt.Sprint(w.Spec.Size)}
			return nil
		}); err != nil {
			return ctrl.Result{}, err
		}
		if _, err := ownership.Apply(ctx, c, w, corev1ac.ConfigMap(w.Name+"-apply", w.Namespace).WithData(map[string]string{"size": fmt.Sprint(w.Spec.Size)}), "churn", ownership.Force{}); err != nil {
			return ctrl.Result{}, err
		}
		w.Status.Replicas = w.Spec.Size
		return ctrl.Result{}, nil
	}, reconcile.WithFinalizer("test.steady.dev/churn", finalizer.Func(func(context.Context, client.Object) error { return nil })))
	if err != nil {
		t.Fatal(err)
	}
	return r.Reconcile
}

// TestMemoryChurn: steady.NewClient's memory under churn, on a manager.
// Owners are created, reconciled (a finalizer added, the status written,
// two children written each), then deleted (their finalizer released by a
// reconcile) and their children deleted; once the manager's informers
// show them all gone, the memory holds nothing: no object, no memo.
// Twice, the second round under the names of the first (new UIDs): what
// was remembered of the first does not make the second skip a write.
func TestMemoryChurn(t *testing.T) {
	env.Require(t)
	t.Run("cluster-wide cache", func(t *testing.T) { memoryChurn(t, false) })
	// A cache of one namespace (cache.Options.DefaultNamespaces), as a
	// namespace-scoped operator's: controller-runtime's multi-namespace
	// cache, whose informers are one per namespace.
	t.Run("namespaced cache", func(t *testing.T) { memoryChurn(t, true) })
}

func memoryChurn(t *testing.T, namespaced bool) {
	ctx := context.Background()
	ns := env.Namespace(t)
	o := testapi.ManagerOptions{Informers: []client.Object{&testapi.Widget{}, &corev1.ConfigMap{}}}
	if namespaced {
		o.Namespace = ns
	}
	m := testapi.StartManager(t, env, o)
	s := scope.Held(m.Client)
	reconcileOne := churnReconciler(t, m.Client)
	const n = 150
	name := func(i int) string { return fmt.Sprint("owner-", i) }
	reconcileAll := func(what string) {
		t.Helper()
		for i := range n {
			req := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: name(i)}}
			testenv.Eventually(t, what+" "+name(i), func() error {
				res, err := reconcileOne(ctx, req)
				if err == nil && res.RequeueAfter > 0 {
					return fmt.Errorf("requeued after %s", res.RequeueAfter)
				}
				return err
			})
		}
	}
	waitCache := func(what string, widgets, configMaps int) {
		t.Helper()
		testenv.Eventually(t, what, func() error {
			w, err := cacheCount(ctx, m, &testapi.WidgetList{}, ns)
			if err != nil {
				return err
			}
			c, err := cacheCount(ctx, m, &corev1.ConfigMapList{}, ns)
			if err != nil {
				return err
			}
			if w != widgets || c != configMaps {
				return fmt.Errorf("the cache holds %d owners and %d children", w, c)
			}
			return nil
		})
	}
	base, baseMemos := s.Len(), s.Memos()
	for round := range 2 {
		for i := range n {
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name(i)}, Spec: testapi.WidgetSpec{Size: round + 1}}
			if err := env.Client.Create(ctx, w); err != nil {
				t.Fatal(err)
			}
		}
		waitCache(fmt.Sprintf("round %d: the cache shows the owners", round), n, 0)
		reconcileAll(fmt.Sprintf("round %d: reconciling", round))
		// Every child is this round's owner's, as this round wants it.
		for i := range n {
			var w testapi.Widget
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name(i)}, &w); err != nil {
				t.Fatal(err)
			}
			if w.Status.Replicas != round+1 {
				t.Errorf("round %d: %s status %d, want %d", round, w.Name, w.Status.Replicas, round+1)
			}
			for _, suffix := range []string{"-cou", "-apply"} {
				var cm corev1.ConfigMap
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name(i) + suffix}, &cm); err != nil {
					t.Fatal(err)
				}
				if !metav1.IsControlledBy(&cm, &w) || cm.Data["size"] != fmt.Sprint(round+1) {
					t.Errorf("round %d: %s: %v, controlled by this round's owner: %v", round, cm.Name, cm.Data, metav1.IsControlledBy(&cm, &w))
				}
			}
		}
		if got := s.Len(); got < 3*n {
			t.Fatalf("round %d: %d objects remembered, want at least %d (owners and children)", round, got, 3*n)
		}
		t.Logf("round %d: %d objects, %d memos remembered", round, s.Len(), s.Memos())
		// Converged: a reconcile writes nothing.
		m.Counter.Reset()
		reconcileAll(fmt.Sprintf("round %d: reconciling again", round))
		if w := m.Counter.Writes(); w != 0 {
			t.Errorf("round %d: converged reconciles wrote %d times (%s)", round, w, m.Counter)
		}
		if err := env.Client.DeleteAllOf(ctx, &testapi.Widget{}, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "every owner marked for deletion in the cache", func() error {
			var l testapi.WidgetList
			if err := m.Manager.GetClient().List(ctx, &l, client.InNamespace(ns)); err != nil {
				return err
			}
			for _, w := range l.Items {
				if w.DeletionTimestamp == nil {
					return fmt.Errorf("%s not marked", w.Name)
				}
			}
			return nil
		})
		reconcileAll(fmt.Sprintf("round %d: releasing", round))
		if err := env.Client.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		waitCache(fmt.Sprintf("round %d: the cache shows everything gone", round), 0, 0)
		testenv.Eventually(t, fmt.Sprintf("round %d: the memory back to %d objects, %d memos", round, base, baseMemos), func() error {
			if l, mm, u := s.Len(), s.Memos(), s.Unshown(); l != base || mm != baseMemos || u != 0 {
				return fmt.Errorf("%d objects, %d memos remembered, %d writes unshown", l, mm, u)
			}
			return nil
		})
	}
}

// TestRestartNeedsNoMemory: a manager started on a cluster another one
// wrote (a restart) writes what is wanted whatever it does not remember,
// and the memory of the first, still running, is not the second's: each
// converges the children the other changed.
func TestRestartNeedsNoMemory(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	a := testapi.StartManager(t, env, testapi.ManagerOptions{Informers: []client.Object{&testapi.Widget{}, &corev1.ConfigMap{}}})
	const n = 50
	name := func(i int) string { return fmt.Sprint("owner-", i) }
	for i := range n {
		if err := env.Client.Create(ctx, &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name(i)}, Spec: testapi.WidgetSpec{Size: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	reconcileAll := func(m *testapi.Cached, r func(context.Context, ctrl.Request) (ctrl.Result, error)) {
		t.Helper()
		for i := range n {
			req := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: name(i)}}
			testenv.Eventually(t, "reconciling "+name(i), func() error {
				res, err := r(ctx, req)
				if err == nil && res.RequeueAfter > 0 {
					return fmt.Errorf("requeued after %s", res.RequeueAfter)
				}
				return err
			})
		}
	}
	check := func(who string, size int) {
		t.Helper()
		for i := range n {
			for _, suffix := range []string{"-cou", "-apply"} {
				var cm corev1.ConfigMap
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name(i) + suffix}, &cm); err != nil {
					t.Fatal(err)
				}
				if cm.Data["size"] != fmt.Sprint(size) {
					t.Errorf("%s: %s holds size %q, want %d", who, cm.Name, cm.Data["size"], size)
				}
			}
		}
	}
	testenv.Eventually(t, "a's cache shows the owners", func() error {
		if got, err := cacheCount(ctx, a, &testapi.WidgetList{}, ns); err != nil || got != n {
			return fmt.Errorf("%d, %v", got, err)
		}
		return nil
	})
	reconcileAll(a, churnReconciler(t, a.Client))
	check("a", 1)
	// Another writer sets every child back to what it was before a's
	// verdicts: a's memory must not hide it (the resourceVersion moved).
	for i := range n {
		for _, suffix := range []string{"-cou", "-apply"} {
			key := client.ObjectKey{Namespace: ns, Name: name(i) + suffix}
			if err := retryOnConflict(func() error {
				var cm corev1.ConfigMap
				if err := env.Client.Get(ctx, key, &cm); err != nil {
					return err
				}
				cm.Data = map[string]string{"size": "stale"}
				return env.Client.Update(ctx, &cm)
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A second manager, as after a restart: it remembers nothing.
	b := testapi.StartManager(t, env, testapi.ManagerOptions{Informers: []client.Object{&testapi.Widget{}, &corev1.ConfigMap{}}})
	if sb := scope.Held(b.Client); sb.Len() != 0 || sb.Memos() != 0 {
		t.Fatalf("a new manager's memory holds %d objects, %d memos; want none", sb.Len(), sb.Memos())
	}
	testenv.Eventually(t, "b's cache shows the stale children", func() error {
		var l corev1.ConfigMapList
		if err := b.Manager.GetClient().List(ctx, &l, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, cm := range l.Items {
			if cm.Name != "kube-root-ca.crt" && cm.Data["size"] != "stale" {
				return fmt.Errorf("%s: %v", cm.Name, cm.Data)
			}
		}
		return nil
	})
	reconcileAll(b, churnReconciler(t, b.Client))
	check("b, restarted", 1)
	// a, whose memory holds its verdicts on the children as it left them,
	// once its cache shows what b wrote: unchanged, nothing written.
	testenv.Eventually(t, "a's cache shows b's writes", func() error {
		var l corev1.ConfigMapList
		if err := a.Manager.GetClient().List(ctx, &l, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, cm := range l.Items {
			if cm.Name != "kube-root-ca.crt" && cm.Data["size"] != "1" {
				return fmt.Errorf("%s: %v", cm.Name, cm.Data)
			}
		}
		return nil
	})
	ra := churnReconciler(t, a.Client)
	reconcileAll(a, ra)
	check("a after b", 1)
	// Children deleted and created again by another writer under their
	// names (new UIDs) with the content a last wrote, minus its owner:
	// a's memory of the old UIDs must not make it skip the owner reference.
	for i := range n {
		for _, suffix := range []string{"-cou", "-apply"} {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name(i) + suffix}}
			if err := env.Client.Delete(ctx, cm); err != nil {
				t.Fatal(err)
			}
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name(i) + suffix}, Data: map[string]string{"size": "1"}}
			if err := env.Client.Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
		}
	}
	testenv.Eventually(t, "a's cache shows the recreated children", func() error {
		var l corev1.ConfigMapList
		if err := a.Manager.GetClient().List(ctx, &l, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, cm := range l.Items {
			if cm.Name != "kube-root-ca.crt" && len(cm.OwnerReferences) != 0 {
				return fmt.Errorf("%s still has owner references", cm.Name)
			}
		}
		return nil
	})
	// Not owned by anyone: ownership takes a child without a controller
	// or record (as controllerutil does).
	reconcileAll(a, ra)
	for i := range n {
		var w testapi.Widget
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name(i)}, &w); err != nil {
			t.Fatal(err)
		}
		for _, suffix := range []string{"-cou", "-apply"} {
			var cm corev1.ConfigMap
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name(i) + suffix}, &cm); err != nil {
				t.Fatal(err)
			}
			if !metav1.IsControlledBy(&cm, &w) {
				t.Errorf("%s, recreated without an owner, not taken back: %v", cm.Name, cm.OwnerReferences)
			}
		}
	}
}

// retryOnConflict runs f again while it fails with a conflict.
func retryOnConflict(f func() error) error {
	for {
		if err := f(); !apierrors.IsConflict(err) {
			return err
		}
	}
}

// TestMemoryOfWritesTheCacheNeverHolds: a manager whose cache holds only
// the ConfigMaps labelled app=seen (cache.Options.ByObject), whose
// reconciler writes children without the label: the informer never shows
// them, created nor deleted. What steady remembers of them must end all
// the same once the informer has moved past them (here: a labelled
// ConfigMap created and deleted after the children were): they are
// out of its sight, and no event of theirs will come.
func TestMemoryOfWritesTheCacheNeverHolds(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	mgr := env.StartManager(t, testenv.WithManagerOptions(ctrl.Options{Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {Label: labels.SelectorFromSet(labels.Set{"app": "seen"})},
	}}}))
	c := steady.NewClient(mgr)
	s := scope.Held(c)
	o := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	if err := env.Client.Create(ctx, o); err != nil {
		t.Fatal(err)
	}
	const n = 50
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("unseen-", i)}}
		if _, err := ownership.CreateOrUpdate(ctx, c, o, cm, func() error { cm.Data = map[string]string{"i": fmt.Sprint(i)}; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Len(); got != n {
		t.Fatalf("%d objects remembered after creating %d children, want %d", got, n, n)
	}
	if err := env.Client.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	// The informer moves on: a ConfigMap it holds, created and deleted
	// after every child was.
	seen := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "seen", Labels: map[string]string{"app": "seen"}}}
	if err := env.Client.Create(ctx, seen); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the cache shows the labelled ConfigMap", func() error {
		return mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(seen), &corev1.ConfigMap{})
	})
	if err := env.Client.Delete(ctx, seen); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the cache shows the labelled ConfigMap gone", func() error {
		if err := mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(seen), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("%v", err)
		}
		return nil
	})
	testenv.Eventually(t, "nothing remembered of the children the cache never held", func() error {
		if got, u := s.Len(), s.Unshown(); got != 0 || u != 0 {
			return fmt.Errorf("%d objects remembered, %d writes unshown", got, u)
		}
		return nil
	})
}

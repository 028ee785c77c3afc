package cachewait_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/steadyk8s/steady/cachewait"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

const lag = 300 * time.Millisecond

// waitCount is how many waits ended with result ("caught_up", "timeout",
// "error", or "" for all) so far, of every kind.
func waitCount(t testing.TB, result string) uint64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, f := range families {
		if f.GetName() != "steady_cachewait_wait_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && (result == "" || l.GetValue() == result) {
					n += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return n
}

// noTimeouts fails the test if a wait timed out after it was called.
func noTimeouts(t testing.TB) {
	t.Helper()
	before := waitCount(t, "timeout")
	t.Cleanup(func() {
		if n := waitCount(t, "timeout") - before; n > 0 {
			t.Errorf("%d waits timed out", n)
		}
	})
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// deletedBehindOurBack deletes obj as someone else would, and returns when
// the cache has seen it and its deletion.
func deletedBehindOurBack(t testing.TB, cached client.Reader, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	must(t, cachewait.ForWrite(ctx, cached, obj))
	must(t, env.Client.Delete(ctx, obj))
	must(t, cachewait.ForDelete(ctx, cached, obj))
}

const hold = "test.steady.dev/hold"

// release removes every finalizer of obj (through c) and returns the answer.
func release(t testing.TB, c client.Client, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj))
	base := obj.DeepCopyObject().(client.Object)
	obj.SetFinalizers(nil)
	must(t, c.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})))
}

// TestGoneIsCaughtUp: a write whose object is gone is caught up, for
// ForWrite and for a Client's later reads.
func TestGoneIsCaughtUp(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	api := cachewait.WithAPIReader{Reader: cc.APIReader, After: 100 * time.Millisecond}

	t.Run("deleted by someone else, then Get and List", func(t *testing.T) {
		noTimeouts(t)
		ns := env.Namespace(t)
		c := cachewait.NewClient(cc.Client, api, cachewait.WithTimeout(3*time.Second))
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gone"}}
		must(t, c.Create(ctx, cm))
		deletedBehindOurBack(t, cc.Client, cm)
		cc.Counter.Reset()
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Fatalf("Get of the name: %v, want NotFound", err)
		}
		var list corev1.ConfigMapList
		must(t, c.List(ctx, &list, client.InNamespace(ns)))
		must(t, c.List(ctx, &list))
		if n := cc.Counter.Get("GET"); n != 1 {
			t.Errorf("%d GETs through the API reader, want 1 (%s)", n, cc.Counter)
		}
	})

	for _, cacheDropped := range []bool{false, true} {
		t.Run(fmt.Sprintf("released by the last finalizer, then ForWrite (cache already dropped it: %v)", cacheDropped), func(t *testing.T) {
			noTimeouts(t)
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "released", Finalizers: []string{hold}}}
			must(t, env.Client.Create(ctx, w))
			must(t, cachewait.ForWrite(ctx, cc.Client, w))
			must(t, env.Client.Delete(ctx, w))
			release(t, env.Client, w)
			if w.DeletionTimestamp == nil || len(w.Finalizers) != 0 {
				t.Fatalf("the patch answer is not a released object: %+v", w.ObjectMeta)
			}
			if cacheDropped {
				must(t, cachewait.ForDelete(ctx, cc.Client, w))
			}
			cc.Counter.Reset()
			if err := cachewait.ForWrite(ctx, cc.Client, w, cachewait.WithTimeout(3*time.Second)); err != nil {
				t.Fatalf("ForWrite after the release: %v", err)
			}
			if err := cc.Client.Get(ctx, client.ObjectKeyFromObject(w), &testapi.Widget{}); !apierrors.IsNotFound(err) {
				t.Errorf("cache after ForWrite of the release: %v, want NotFound", err)
			}
			if n := cc.Counter.Get("GET"); n != 0 {
				t.Errorf("%d GETs, want none: a release needs no API read", n)
			}
		})
	}
}

// TestTenantLoopDoesNotSlowDown runs an operator's life: each tenant is a
// Widget holding a finalizer with children; it is created, read, deleted,
// its children removed (one of them by someone else) and its finalizer
// released, as reconcile.For does. No wait may time out, so the tenth
// tenant takes what the first took.
func TestTenantLoopDoesNotSlowDown(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	c := cachewait.NewClient(cc.Client, cachewait.WithTimeout(2*time.Second),
		cachewait.WithAPIReader{Reader: cc.APIReader, After: 2 * lag})
	ns := env.Namespace(t)
	noTimeouts(t)
	cc.Counter.Reset()
	caughtUp := waitCount(t, "caught_up")
	const tenants, children = 10, 3
	for i := 0; i < tenants; i++ {
		var owners testapi.WidgetList
		must(t, c.List(ctx, &owners, client.InNamespace(ns)))
		var cms corev1.ConfigMapList
		must(t, c.List(ctx, &cms, client.InNamespace(ns)))
		if len(owners.Items) != 0 || len(cms.Items) != 0 {
			t.Fatalf("tenant %d: the cache still holds %d owners and %d children of earlier tenants", i, len(owners.Items), len(cms.Items))
		}
		owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("tenant-%d", i), Finalizers: []string{hold}}}
		must(t, c.Create(ctx, owner))
		var kids []*corev1.ConfigMap
		for j := 0; j < children; j++ {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("tenant-%d-%d", i, j),
				Labels: map[string]string{"tenant": owner.Name}}}
			must(t, c.Create(ctx, cm))
			kids = append(kids, cm)
		}
		must(t, c.List(ctx, &cms, client.InNamespace(ns), client.MatchingLabels{"tenant": owner.Name}))
		if len(cms.Items) != children {
			t.Fatalf("tenant %d: %d children in the cache, want %d", i, len(cms.Items), children)
		}
		// Someone else deletes a child; the tenant is deleted.
		must(t, env.Client.Delete(ctx, kids[0]))
		must(t, c.Delete(ctx, owner))
		var got testapi.Widget
		must(t, c.Get(ctx, client.ObjectKeyFromObject(owner), &got))
		if got.DeletionTimestamp == nil {
			t.Fatalf("tenant %d: Get after the Delete does not show the deletion", i)
		}
		// The reconciler removes the children and releases the owner.
		for _, cm := range kids[1:] {
			must(t, c.Delete(ctx, cm))
		}
		release(t, c, owner)
		if err := c.Get(ctx, client.ObjectKeyFromObject(owner), &got); !apierrors.IsNotFound(err) {
			t.Fatalf("tenant %d: Get after the release: %v, want NotFound", i, err)
		}
	}
	t.Logf("%d waits caught up, requests: %s", waitCount(t, "caught_up")-caughtUp, cc.Counter)
	// The API reader is asked only where the cache lagged more than twice
	// its usual delay.
	if n := cc.Counter.Get("GET"); n > tenants {
		t.Errorf("%d GETs through the API reader for %d tenants", n, tenants)
	}
}

// TestTimedOutExpectationDoesNotPoison: without an API reader, a read right
// after an object was deleted behind the Client's back cannot tell it from
// one not seen yet and times out, once; later reads do not wait for it.
func TestTimedOutExpectationDoesNotPoison(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	c := cachewait.NewClient(cc.Client, cachewait.WithTimeout(300*time.Millisecond))
	ns := env.Namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lost"}}
	must(t, c.Create(ctx, cm))
	deletedBehindOurBack(t, cc.Client, cm)
	before := waitCount(t, "timeout")
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !cachewait.IsTimeout(err) {
		t.Fatalf("first Get: %v, want a TimeoutError", err)
	}
	for i := 0; i < 3; i++ {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Fatalf("Get %d after the timeout: %v, want NotFound", i, err)
		}
		must(t, c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns)))
	}
	if n := waitCount(t, "timeout") - before; n != 1 {
		t.Errorf("%d timeouts, want exactly 1", n)
	}
}

// TestTrackerGoneChild: a child that is gone, or marked for deletion and
// held by another finalizer, does not stall its owner.
func TestTrackerGoneChild(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	const requeue = 50 * time.Millisecond
	for _, tc := range []struct {
		name string
		// act writes or deletes the child and records it.
		act func(t *testing.T, tr *cachewait.Tracker, owner client.Object, child *corev1.ConfigMap)
	}{
		{"written, then deleted by someone else", func(t *testing.T, tr *cachewait.Tracker, owner client.Object, child *corev1.ConfigMap) {
			must(t, env.Client.Create(ctx, child))
			tr.Wrote(owner, child)
			deletedBehindOurBack(t, cc.Client, child)
		}},
		{"written, then released", func(t *testing.T, tr *cachewait.Tracker, owner client.Object, child *corev1.ConfigMap) {
			child.Finalizers = []string{hold}
			must(t, env.Client.Create(ctx, child))
			must(t, env.Client.Delete(ctx, child))
			release(t, env.Client, child)
			must(t, cachewait.ForDelete(ctx, cc.Client, child)) // the cache dropped it
			tr.Wrote(owner, child)
		}},
		{"deleted, held by another finalizer", func(t *testing.T, tr *cachewait.Tracker, owner client.Object, child *corev1.ConfigMap) {
			child.Finalizers = []string{hold}
			must(t, env.Client.Create(ctx, child))
			t.Cleanup(func() { release(t, env.Client, child.DeepCopy()) })
			must(t, cachewait.ForWrite(ctx, cc.Client, child)) // the cache holds it unmarked
			must(t, env.Client.Delete(ctx, child))
			tr.Deleted(owner, child)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := cachewait.NewTracker(cc.Client, cachewait.WithRequeue(requeue),
				cachewait.WithAPIReader{Reader: cc.APIReader, After: 100 * time.Millisecond})
			owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "owner"}}
			must(t, env.Client.Create(ctx, owner))
			tc.act(t, tr, owner, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: owner.Namespace, Name: "child"}})
			// The TTL is a minute: 40 requeues of 50ms end long before.
			for requeues := 0; ; requeues++ {
				after, err := tr.CaughtUp(ctx, owner)
				must(t, err)
				if after == 0 {
					t.Logf("caught up after %d requeues", requeues)
					break
				}
				if requeues == 40 {
					t.Fatalf("still not caught up after %d requeues: the owner is stalled", requeues)
				}
				time.Sleep(after)
			}
		})
	}
}

// TestDryRunIsNotRecorded: a dry-run write changes nothing, so no read
// waits for it.
func TestDryRunIsNotRecorded(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	c := cachewait.NewClient(cc.Client, cachewait.WithTimeout(time.Second))
	ns := env.Namespace(t)
	kept := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept"}}
	must(t, env.Client.Create(ctx, kept))
	must(t, cachewait.ForWrite(ctx, cc.Client, kept))
	waits := waitCount(t, "")
	dry := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dry"}}
	must(t, c.Create(ctx, dry, client.DryRunAll))
	patched := kept.DeepCopy()
	patched.Data = map[string]string{"k": "v"}
	must(t, c.Patch(ctx, patched, client.MergeFrom(kept), client.DryRunAll))
	must(t, c.Delete(ctx, kept.DeepCopy(), client.DryRunAll))
	if err := c.Get(ctx, client.ObjectKeyFromObject(dry), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("Get of the dry-run create: %v, want NotFound", err)
	}
	var got corev1.ConfigMap
	must(t, c.Get(ctx, client.ObjectKeyFromObject(kept), &got))
	if got.Data != nil || got.DeletionTimestamp != nil {
		t.Errorf("dry runs changed what the cache shows: %+v", got)
	}
	must(t, c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns)))
	if n := waitCount(t, "") - waits; n != 0 {
		t.Errorf("%d waits after dry runs, want none", n)
	}
}

// TestApplyAndDeleteAllOfAreSeen: Apply, status Apply and DeleteAllOf
// through the Client are waited for like the other writes.
func TestApplyAndDeleteAllOfAreSeen(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	noTimeouts(t)
	c := cachewait.NewClient(cc.Client, cachewait.WithTimeout(3*time.Second))
	owner := client.FieldOwner("cachewait-test")

	t.Run("Apply", func(t *testing.T) {
		ns := env.Namespace(t)
		key := client.ObjectKey{Namespace: ns, Name: "applied"}
		must(t, c.Apply(ctx, corev1ac.ConfigMap(key.Name, ns).WithData(map[string]string{"k": "v"}), owner, client.ForceOwnership))
		if err := c.Get(ctx, key, &corev1.ConfigMap{}, cachewait.NoWait{}); !apierrors.IsNotFound(err) {
			t.Fatalf("Get with NoWait right after Apply: %v; the cache did not lag, the test proves nothing", err)
		}
		var got corev1.ConfigMap
		must(t, c.Get(ctx, key, &got))
		if got.Data["k"] != "v" {
			t.Errorf("Get after Apply: %+v", got)
		}
	})

	t.Run("status Apply", func(t *testing.T) {
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
		must(t, env.Client.Create(ctx, w))
		must(t, cachewait.ForWrite(ctx, cc.Client, w))
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(testapi.GroupVersion.WithKind("Widget"))
		u.SetNamespace(w.Namespace)
		u.SetName(w.Name)
		must(t, unstructured.SetNestedField(u.Object, "Applied", "status", "phase"))
		must(t, c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), owner, client.ForceOwnership))
		var got testapi.Widget
		must(t, c.Get(ctx, client.ObjectKeyFromObject(w), &got, cachewait.NoWait{}))
		if got.Status.Phase == "Applied" {
			t.Fatal("the cache held the status Apply at once; the test proves nothing")
		}
		must(t, c.Get(ctx, client.ObjectKeyFromObject(w), &got))
		if got.Status.Phase != "Applied" {
			t.Errorf("Get after status Apply: phase %q", got.Status.Phase)
		}
	})

	t.Run("DeleteAllOf", func(t *testing.T) {
		ns := env.Namespace(t)
		batch := client.MatchingLabels{"batch": "x"}
		for i := 0; i < 3; i++ {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("b-", i), Labels: batch}}
			must(t, env.Client.Create(ctx, cm))
			must(t, cachewait.ForWrite(ctx, cc.Client, cm))
		}
		must(t, c.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns), batch))
		var list corev1.ConfigMapList
		must(t, c.List(ctx, &list, client.InNamespace(ns), batch, cachewait.NoWait{}))
		if len(list.Items) == 0 {
			t.Fatal("the cache held the DeleteAllOf at once; the test proves nothing")
		}
		must(t, c.List(ctx, &list, client.InNamespace(ns), batch))
		if len(list.Items) != 0 {
			t.Errorf("List after DeleteAllOf: %d objects", len(list.Items))
		}
		// What the Client creates afterwards is not waited away.
		again := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b-again", Labels: batch}}
		must(t, c.Create(ctx, again))
		must(t, c.List(ctx, &list, client.InNamespace(ns), batch))
		if len(list.Items) != 1 {
			t.Errorf("List after the create that followed DeleteAllOf: %d objects, want 1", len(list.Items))
		}
	})
}

// TestTerminatingDoesNotBlockLists: a Delete of an object another finalizer
// holds is caught up once the cache shows the deletion mark.
func TestTerminatingDoesNotBlockLists(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	for _, namedOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("deleted by name only: %v", namedOnly), func(t *testing.T) {
			noTimeouts(t)
			c := cachewait.NewClient(cc.Client, cachewait.WithTimeout(3*time.Second))
			ns := env.Namespace(t)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held", Finalizers: []string{hold}}}
			must(t, c.Create(ctx, cm))
			t.Cleanup(func() { release(t, env.Client, cm.DeepCopy()) })
			del := client.Object(cm)
			if namedOnly {
				del = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cm.Name}}
			}
			must(t, c.Delete(ctx, del))
			for _, opts := range [][]client.ListOption{{client.InNamespace(ns)}, nil} {
				var list corev1.ConfigMapList
				must(t, c.List(ctx, &list, opts...))
				found := false
				for _, item := range list.Items {
					if item.Namespace == ns && item.Name == cm.Name {
						found = item.DeletionTimestamp != nil
					}
				}
				if !found {
					t.Errorf("List %v: the held object is not listed as marked for deletion", opts)
				}
			}
			var got corev1.ConfigMap
			must(t, c.Get(ctx, client.ObjectKeyFromObject(cm), &got))
			if got.DeletionTimestamp == nil {
				t.Error("Get after the Delete does not show the deletion mark")
			}
		})
	}
}

// withWatch makes the manager's client a client.WithWatch for the
// interceptor.
type withWatch struct{ client.Client }

func (withWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("not supported")
}

// TestFaults: a write that fails is not waited for; a cache read that fails
// during a wait is returned, naming the object.
func TestFaults(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)

	t.Run("a failed write is not recorded", func(t *testing.T) {
		ns := env.Namespace(t)
		failing := interceptor.NewClient(withWatch{cc.Client}, interceptor.Funcs{
			Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
				return apierrors.NewInternalError(errors.New("injected"))
			},
			Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, _ client.Patch, _ ...client.PatchOption) error {
				return apierrors.NewConflict(corev1.Resource("configmaps"), obj.GetName(), errors.New("injected"))
			},
		})
		c := cachewait.NewClient(failing, cachewait.WithTimeout(time.Second))
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "never", ResourceVersion: ""}}
		waits := waitCount(t, "")
		if err := c.Create(ctx, cm); !apierrors.IsInternalError(err) {
			t.Fatalf("Create: %v", err)
		}
		cm.ResourceVersion = "1"
		if err := c.Patch(ctx, cm, client.MergeFrom(cm.DeepCopy())); !apierrors.IsConflict(err) {
			t.Fatalf("Patch: %v", err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("Get: %v, want NotFound", err)
		}
		if n := waitCount(t, "") - waits; n != 0 {
			t.Errorf("%d waits after failed writes, want none", n)
		}
	})

	t.Run("a cache read that fails during a wait", func(t *testing.T) {
		ns := env.Namespace(t)
		var fail atomic.Bool
		flaky := interceptor.NewClient(withWatch{cc.Client}, interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if fail.Load() {
					return apierrors.NewInternalError(errors.New("injected"))
				}
				return c.Get(ctx, key, obj, opts...)
			},
		})
		c := cachewait.NewClient(flaky, cachewait.WithTimeout(3*time.Second))
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flaky"}}
		must(t, c.Create(ctx, cm))
		fail.Store(true)
		for name, read := range map[string]func() error{
			"Client.Get": func() error { return c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}) },
			"ForWrite":   func() error { return cachewait.ForWrite(ctx, flaky, cm) },
		} {
			err := read()
			if !apierrors.IsInternalError(err) || cachewait.IsTimeout(err) || !strings.Contains(err.Error(), "ConfigMap "+ns+"/flaky") {
				t.Errorf("%s while the cache fails: %v; want the 500, naming ConfigMap %s/flaky", name, err, ns)
			}
		}
		// The expectation is kept: once the cache reads again, Get waits
		// for the create.
		fail.Store(false)
		must(t, c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}))
	})
}

// TestPatcherReleaseWithCacheWait: reconcile's Patcher, removing the last
// finalizer of an object being deleted with WithCacheWait, returns at once
// without error (the issue: it blocked and returned a timeout).
func TestPatcherReleaseWithCacheWait(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	noTimeouts(t)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w", Finalizers: []string{hold}}}
	must(t, env.Client.Create(ctx, w))
	must(t, cachewait.ForWrite(ctx, cc.Client, w))
	must(t, env.Client.Delete(ctx, w))
	must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(w), w))
	p, err := reconcile.NewPatcher(env.Client, w)
	must(t, err)
	w.Finalizers = nil
	err = p.Patch(ctx, w, reconcile.WithCacheWait{Reader: cc.Client, Options: []cachewait.WaitOption{cachewait.WithTimeout(3 * time.Second)}})
	if err != nil {
		t.Fatalf("Patch releasing the object with the cache wait: %v", err)
	}
	if err := cc.Client.Get(ctx, client.ObjectKeyFromObject(w), &testapi.Widget{}); !apierrors.IsNotFound(err) {
		t.Errorf("cache after the release: %v, want NotFound", err)
	}
}

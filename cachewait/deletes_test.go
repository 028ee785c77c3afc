package cachewait_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/cachewait"
	"github.com/steadyk8s/steady/internal/testapi"
)

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

// TestDeleteAfterUnreadCreate: a child created and later deleted through a
// Client with no API reader, no read through the Client in between (the
// cache saw both meanwhile): the List after the Delete must not wait.
// It does, the full timeout: the Delete, finding the create still pending,
// counts the cache's absence only once it has seen the object, which it no
// longer holds. Fixing it needs either a cache read at Delete time (which
// can start an informer) or the informer's progress (not exposed by a
// client.Reader); give WithAPIReader meanwhile.
func TestDeleteAfterUnreadCreate(t *testing.T) {
	env.Require(t)
	t.Skip("BUG: Create then Delete through a Client without WithAPIReader, the cache having seen both, stalls the next List for the timeout")
	ctx := context.Background()
	cc := startManager(t, lag)
	noTimeouts(t)
	c := cachewait.NewClient(cc.Client, cachewait.WithTimeout(3*time.Second))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "short-lived"}}
	must(t, c.Create(ctx, cm))
	must(t, cachewait.ForWrite(ctx, cc.Client, cm))
	must(t, c.Delete(ctx, cm))
	must(t, cachewait.ForDelete(ctx, cc.Client, cm))
	must(t, c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(cm.Namespace)))
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

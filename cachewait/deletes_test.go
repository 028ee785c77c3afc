package cachewait_test

import (
	"context"
	"errors"
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
		c := cachewait.NewClient(cc.Manager, api, cachewait.WithTimeout(3*time.Second))
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

// TestTimedOutExpectationDoesNotPoison: without an API reader (a Cluster
// that has none), a read right after an object was deleted behind the
// Client's back cannot tell it from one not seen yet and times out, once;
// later reads do not wait for it.
func TestTimedOutExpectationDoesNotPoison(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	c := cachewait.NewClient(clusterOf(cc.Client, nil), cachewait.WithTimeout(300*time.Millisecond))
	ns := env.Namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lost"}}
	must(t, c.Create(ctx, cm))
	deletedBehindOurBack(t, cc.Client, cm)
	before := waitCount(t, "timeout")
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !errors.As(err, new(*cachewait.TimeoutError)) {
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
			tr := cachewait.NewTracker(cc.Manager,
				cachewait.WithAPIReader{Reader: cc.APIReader, After: 100 * time.Millisecond})
			owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "owner"}}
			must(t, env.Client.Create(ctx, owner))
			tc.act(t, tr, owner, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: owner.Namespace, Name: "child"}})
			// The TTL is a minute: 40 requeues of 50ms end long before.
			for requeues := 0; ; requeues++ {
				ok, err := tr.CaughtUp(ctx, owner)
				must(t, err)
				if ok {
					t.Logf("caught up after %d requeues", requeues)
					break
				}
				if requeues == 40 {
					t.Fatalf("still not caught up after %d requeues: the owner is stalled", requeues)
				}
				time.Sleep(requeue)
			}
		})
	}
}

// TestDeleteAfterUnreadCreate: a child created and later deleted through a
// Client made the default way (NewClient(mgr)), no read through the Client
// in between (the cache saw both meanwhile): the List after the Delete must
// not wait out the timeout (the bug: it did, counting the cache's absence
// only once it had seen the object, which it no longer held). The cache
// alone cannot tell "deleted" from "not seen yet": the manager's API
// reader, asked once, tells.
func TestDeleteAfterUnreadCreate(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	noTimeouts(t)
	c := cachewait.NewClient(cc.Manager, cachewait.WithTimeout(3*time.Second))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "short-lived"}}
	must(t, c.Create(ctx, cm))
	must(t, cachewait.ForWrite(ctx, cc.Client, cm))
	must(t, c.Delete(ctx, cm))
	must(t, cachewait.ForDelete(ctx, cc.Client, cm))
	cc.Counter.Reset()
	must(t, c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(cm.Namespace)))
	must(t, c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(cm.Namespace)))
	if n := cc.Counter.Get("GET"); n != 1 {
		t.Errorf("%d GETs, want 1 (%s)", n, cc.Counter)
	}
}

// TestDefaultNeverWaitsForGone: through a Client and a Tracker made the
// default way (NewClient(mgr), NewTracker(mgr), no option), an object
// written and then deleted by someone else keeps no read waiting until the
// timeout, nor its owner until the TTL (the bug: without WithAPIReader,
// the next List of the kind waited the whole timeout and failed). One GET
// of the manager's API reader tells it gone; later reads ask nothing.
func TestDefaultNeverWaitsForGone(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	noTimeouts(t)

	t.Run("Client", func(t *testing.T) {
		ns := env.Namespace(t)
		c := cachewait.NewClient(cc.Manager, cachewait.WithTimeout(3*time.Second))
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gone"}}
		must(t, c.Create(ctx, cm))
		deletedBehindOurBack(t, cc.Client, cm)
		cc.Counter.Reset()
		var list corev1.ConfigMapList
		must(t, c.List(ctx, &list, client.InNamespace(ns)))
		if len(list.Items) != 0 {
			t.Errorf("List: %d items, want none", len(list.Items))
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("Get: %v, want NotFound", err)
		}
		must(t, c.List(ctx, &list))
		if n := cc.Counter.Get("GET"); n != 1 {
			t.Errorf("%d GETs, want 1 (%s)", n, cc.Counter)
		}
	})

	t.Run("Tracker", func(t *testing.T) {
		tr := cachewait.NewTracker(cc.Manager)
		owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "owner", UID: "owner-uid"}}
		child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: owner.Namespace, Name: "child"}}
		must(t, env.Client.Create(ctx, child))
		tr.Wrote(owner, child)
		deletedBehindOurBack(t, cc.Client, child)
		caughtUp(t, tr, owner)
	})
}

// TestUnseenDeleteDoesNotReappear: a child created and deleted through the
// Client while the cache lags longer than the API reader's After. The API
// reader says it is gone, so a List need not wait; but the cache has not
// seen the create yet, and will show the child (the create) before its
// deletion. No List through the Client may show it then (the bug this
// guards: an expectation the API reader settled was dropped, and the next
// List showed the deleted child).
func TestUnseenDeleteDoesNotReappear(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	const delay = 1500 * time.Millisecond
	cc := startManager(t, delay)
	noTimeouts(t)
	ns := env.Namespace(t)
	c := cachewait.NewClient(cc.Manager, cachewait.WithTimeout(5*time.Second),
		cachewait.WithAPIReader{Reader: cc.APIReader, After: 200 * time.Millisecond})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "blink"}}
	must(t, c.Create(ctx, cm))
	time.Sleep(300 * time.Millisecond) // the cache will show it this long
	must(t, c.Delete(ctx, cm))
	start := time.Now()
	shown := 0
	for time.Since(start) < delay+time.Second {
		var list corev1.ConfigMapList
		must(t, c.List(ctx, &list, client.InNamespace(ns)))
		for _, item := range list.Items {
			if item.Name == cm.Name {
				shown++
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if shown > 0 {
		t.Errorf("%d Lists after the Delete show the deleted child", shown)
	}
	var all corev1.ConfigMapList
	must(t, cc.Client.List(ctx, &all, client.InNamespace(ns)))
	if len(all.Items) != 0 {
		t.Fatalf("the cache still holds %d objects: the test ended before the cache caught up", len(all.Items))
	}
}

// TestDeleteByNameThenRecreated: a delete by name (no UID), as a
// StatefulSet restart deletes web-0, and someone recreates the name; once
// the cache holds the new object, reads must not wait for the deleted one
// (the bug: the delete was recorded without a UID and counted as done only
// once the name was gone, so the List waited the whole timeout; a Tracker
// stalled the owner until the TTL).
func TestDeleteByNameThenRecreated(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	noTimeouts(t)
	byName := func(ns string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0"}}
	}
	// recreate makes the name anew, as the StatefulSet controller does, and
	// returns when the cache holds the new object.
	recreate := func(t *testing.T, ns string) *corev1.ConfigMap {
		again := byName(ns)
		must(t, env.Client.Create(ctx, again))
		must(t, cachewait.ForWrite(ctx, cc.Client, again))
		return again
	}
	for _, tc := range []struct {
		name string
		// read: the Client has listed the kind before the delete (the UID
		// is then read from the cache, without a request).
		read bool
		gets int
	}{
		{"after a List", true, 0},
		{"without a read before", false, 1},
	} {
		t.Run("Client "+tc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			old := byName(ns)
			must(t, env.Client.Create(ctx, old))
			must(t, cachewait.ForWrite(ctx, cc.Client, old))
			c := cachewait.NewClient(cc.Manager, cachewait.WithTimeout(3*time.Second))
			if tc.read {
				must(t, c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns)))
			}
			cc.Counter.Reset()
			must(t, c.Delete(ctx, byName(ns)))
			again := recreate(t, ns)
			var list corev1.ConfigMapList
			must(t, c.List(ctx, &list, client.InNamespace(ns)))
			if len(list.Items) != 1 || list.Items[0].UID != again.UID {
				t.Errorf("List after the recreation: %+v, want the new web-0 only", list.Items)
			}
			if n := cc.Counter.Get("GET"); n != tc.gets {
				t.Errorf("%d GETs, want %d (%s)", n, tc.gets, cc.Counter)
			}
			if n := cc.Counter.Get("DELETE"); n != 1 {
				t.Errorf("%d DELETEs, want 1 (%s)", n, cc.Counter)
			}
		})
	}

	t.Run("Tracker", func(t *testing.T) {
		ns := env.Namespace(t)
		must(t, env.Client.Create(ctx, byName(ns)))
		tr := cachewait.NewTracker(cc.Manager)
		owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sts", UID: "sts-uid"}}
		must(t, env.Client.Delete(ctx, byName(ns)))
		tr.Deleted(owner, byName(ns))
		recreate(t, ns)
		caughtUp(t, tr, owner)
	})
}

// TestDeleteByNameOfWhatTheCacheHasNotSeen: the cache still shows web-0 as
// it was, but someone has deleted and recreated it; the Client's delete by
// name removes the new one. The List after it must not show the new one,
// whose creation the cache sees before its deletion (the bug this guards:
// taking the UID from the cache without a precondition, the Client waited
// for the old object only, and the List showed the one it deleted).
func TestDeleteByNameOfWhatTheCacheHasNotSeen(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	noTimeouts(t)
	ns := env.Namespace(t)
	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0"}}
	must(t, env.Client.Create(ctx, old))
	must(t, cachewait.ForWrite(ctx, cc.Client, old))
	c := cachewait.NewClient(cc.Manager, cachewait.WithTimeout(3*time.Second))
	must(t, c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns)))
	must(t, env.Client.Delete(ctx, old))
	again := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0"}}
	must(t, env.Client.Create(ctx, again))
	time.Sleep(lag / 2) // the cache will show the new one this long
	var got corev1.ConfigMap
	must(t, cc.Manager.GetClient().Get(ctx, client.ObjectKeyFromObject(old), &got))
	if got.UID != old.UID {
		t.Fatal("the cache already shows the new object: the test proves nothing")
	}
	cc.Counter.Reset()
	must(t, c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0"}}))
	// The precondition on the cache's UID fails, the API reader tells the
	// new UID, and the delete is made again.
	if d, g := cc.Counter.Get("DELETE"), cc.Counter.Get("GET"); d != 2 || g != 1 {
		t.Errorf("%d DELETEs and %d GETs, want 2 and 1 (%s)", d, g, cc.Counter)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(again), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the new web-0 after the delete: %v, want NotFound", err)
	}
	// The cache shows the old web-0 (someone else's delete, not yet seen),
	// then the new one, then nothing: no List may show the new one.
	for start := time.Now(); time.Since(start) < 3*lag; time.Sleep(10 * time.Millisecond) {
		var list corev1.ConfigMapList
		must(t, c.List(ctx, &list, client.InNamespace(ns)))
		for _, item := range list.Items {
			if item.UID == again.UID {
				t.Fatalf("List after the delete shows the web-0 it deleted")
			}
		}
	}
	var list corev1.ConfigMapList
	must(t, c.List(ctx, &list, client.InNamespace(ns)))
	if len(list.Items) != 0 {
		t.Errorf("List once the cache caught up shows %+v, want nothing", list.Items)
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
	c := cachewait.NewClient(cc.Manager, cachewait.WithTimeout(2*time.Second),
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

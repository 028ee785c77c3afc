package reconcile_test

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// waitCached polls the cache until it holds obj at resourceVersion rv (and
// obj's UID), or fails.
func waitCached(t *testing.T, r client.Reader, obj client.Object, rv string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		got := &testapi.Widget{}
		if r.Get(context.Background(), client.ObjectKeyFromObject(obj), got) == nil &&
			got.UID == obj.GetUID() && got.ResourceVersion == rv {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the cache never held %s at %s", obj.GetName(), rv)
}

// A conflict re-read through a lagging cache can return a state OLDER than
// the snapshot (the snapshot was read from the API server, as NewPatcher
// asks, or is the answer of this Patcher's own last write). That older
// state is as stale as one at the conflicting resourceVersion: rebasing on
// it, a change the older state happens to show is taken as already there
// and silently not written.
func TestRereadOlderThanTheSnapshotIsStale(t *testing.T) {
	env.Require(t)
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 300 * time.Millisecond, Informers: []client.Object{&testapi.Widget{}}})
	ctx := context.Background()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w",
		Finalizers: []string{"test.steady.dev/mine"}}}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	waitCached(t, cc.Client, w, w.ResourceVersion) // the cache: [mine]
	// Someone takes the finalizer off (the cache will not see it for 300 ms).
	w.Finalizers = nil
	if err := env.Client.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	fresh := get(t, w) // as read from the API server: no finalizer
	p, err := reconcile.NewPatcher(cc.Client, fresh)
	if err != nil {
		t.Fatal(err)
	}
	fresh.Finalizers = []string{"test.steady.dev/mine"} // we put it back
	// Another writer meanwhile: the locked write conflicts.
	otherWriterLabels(t, w)
	if err := p.Patch(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	got := get(t, w)
	if !slices.Contains(got.Finalizers, "test.steady.dev/mine") || got.Labels["their"] != "label" {
		t.Errorf("Patch succeeded but stored finalizers %v, labels %v: the finalizer was never written", got.Finalizers, got.Labels)
	}
}

// The same through a cache that still holds the previous incarnation of a
// recreated object: another UID at an OLDER resourceVersion is the cache
// lagging, not our object gone (cachewait draws the same line). Taking it
// for gone ends Patch with success and nothing written.
func TestRereadOfAnOlderIncarnationIsNotGone(t *testing.T) {
	env.Require(t)
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 300 * time.Millisecond, Informers: []client.Object{&testapi.Widget{}}})
	ctx := context.Background()
	ns := env.Namespace(t)
	old := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}
	if err := env.Client.Create(ctx, old); err != nil {
		t.Fatal(err)
	}
	waitCached(t, cc.Client, old, old.ResourceVersion)
	if err := env.Client.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	fresh := get(t, w)
	p, _ := reconcile.NewPatcher(cc.Client, fresh)
	conditions.MarkTrue(fresh, "Mine", "Set", "")
	fresh.Status.Phase = "Mine"
	otherWriterLabels(t, w)
	if err := p.Patch(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	got := get(t, w)
	if got.UID != w.UID || !conditions.IsTrue(got, "Mine") || got.Status.Phase != "Mine" {
		t.Errorf("Patch succeeded but stored status %+v: nothing was written", got.Status)
	}
}

// And through a cache that has not seen the object's creation yet: its
// NotFound after a conflict is the cache lagging; only a write's NotFound
// says gone. Also without status subresource, where the status write's 404
// is followed by a re-read to tell gone from "no subresource".
func TestRereadOfAnObjectTheCacheHasNotSeenIsNotGone(t *testing.T) {
	env.Require(t)
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 300 * time.Millisecond, Informers: []client.Object{&testapi.Widget{}}})
	ctx := context.Background()
	t.Run("conflict", func(t *testing.T) {
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
		if err := env.Client.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		fresh := get(t, w)
		p, _ := reconcile.NewPatcher(cc.Client, fresh)
		conditions.MarkTrue(fresh, "Mine", "Set", "")
		otherWriterLabels(t, w)
		if err := p.Patch(ctx, fresh); err != nil {
			t.Fatal(err)
		}
		if got := get(t, w); !conditions.IsTrue(got, "Mine") {
			t.Errorf("Patch succeeded but stored status %+v: nothing was written", got.Status)
		}
	})
}

// otherWriterLabels is another writer labelling w meanwhile, so that a
// locked write of a Patcher snapshotted before conflicts.
func otherWriterLabels(t *testing.T, w *testapi.Widget) {
	t.Helper()
	other := get(t, w)
	other.Labels = map[string]string{"their": "label"}
	if err := env.Client.Update(context.Background(), other); err != nil {
		t.Fatal(err)
	}
}

// The UID precondition the docs promise on every write does not hold for
// the status subresource: its strategy takes metadata from the stored
// object, so a metadata.uid in a status merge patch is never compared. A
// status change without a condition change (no list, so no lock) is
// written onto an object deleted and recreated under the same name.
func TestStatusWriteNeverLandsOnARecreatedObject(t *testing.T) {
	env.Require(t)
	w, c, _ := fixture(t)
	ctx := context.Background()
	p, _ := reconcile.NewPatcher(c, w)
	if err := env.Client.Delete(ctx, w.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	fresh := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name}}
	if err := env.Client.Create(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	w.Status.Phase = "Mine"
	w.Status.Replicas = 7
	if err := p.Patch(ctx, w); err != nil {
		t.Fatalf("Patch = %v, want nil (the object is gone)", err)
	}
	if got := get(t, fresh); got.Status.Phase != "" || got.Status.Replicas != 0 {
		t.Errorf("the old object's status was written onto the new one: %+v", got.Status)
	}
}

// Through a lagging cache that still holds the deleted object: the API
// server's answer to the UID precondition (422 on metadata.uid) already
// says the object is gone; a re-read of the cache that still shows it must
// not turn that into an error.
func TestRecreatedObjectThroughALaggingCacheIsGone(t *testing.T) {
	env.Require(t)
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 300 * time.Millisecond, Informers: []client.Object{&testapi.Widget{}}})
	ctx := context.Background()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}, Spec: testapi.WidgetSpec{Size: 1}}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	waitCached(t, cc.Client, w, w.ResourceVersion)
	old := &testapi.Widget{}
	if err := cc.Client.Get(ctx, client.ObjectKeyFromObject(w), old); err != nil {
		t.Fatal(err)
	}
	p, _ := reconcile.NewPatcher(cc.Client, old)
	if err := env.Client.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	fresh := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name}, Spec: testapi.WidgetSpec{Size: 1}}
	if err := env.Client.Create(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	old.Spec.Size = 9
	if err := p.Patch(ctx, old); err != nil {
		t.Errorf("Patch = %v, want nil (the object is gone)", err)
	}
	if got := get(t, fresh); got.Spec.Size != 1 {
		t.Errorf("the new object was written: %+v", got.Spec)
	}
}

// Dropping the last of our labels (or annotations) makes the map absent,
// and a merge patch from {"a":"b"} to nothing is "labels": null, which
// deletes every label, also those another writer added meanwhile.
func TestDroppingOurLastLabelKeepsTheirs(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	for _, field := range []string{"labels", "annotations"} {
		t.Run(field, func(t *testing.T) {
			w, c, _ := fixture(t)
			set := func(o *testapi.Widget, m map[string]string) {
				if field == "labels" {
					o.Labels = m
				} else {
					o.Annotations = m
				}
			}
			set(w, map[string]string{"mine": "1"})
			if err := env.Client.Update(ctx, w); err != nil {
				t.Fatal(err)
			}
			p, _ := reconcile.NewPatcher(c, w)
			other := get(t, w)
			set(other, map[string]string{"mine": "1", "their": "1"})
			if err := env.Client.Update(ctx, other); err != nil {
				t.Fatal(err)
			}
			set(w, nil)
			if err := p.Patch(ctx, w); err != nil {
				t.Fatal(err)
			}
			got := get(t, w)
			m := got.Labels
			if field == "annotations" {
				m = got.Annotations
			}
			if m["their"] != "1" || m["mine"] != "" {
				t.Errorf("stored %s %v, want their=1 only", field, m)
			}
		})
	}
}

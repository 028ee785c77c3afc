package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// Item 6: Patch refuses an object other than the snapshotted one.
func TestPatchRefusesAnotherObject(t *testing.T) {
	env.Require(t)
	w, c, n := fixture(t)
	p, _ := reconcile.NewPatcher(c, w)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name}}
	other := w.DeepCopy()
	other.Name = "other"
	u := newUnstructured("Thing", w.Namespace, w.Name)
	for _, obj := range []client.Object{cm, other, u} {
		err := p.Patch(context.Background(), obj)
		var me *reconcile.MismatchError
		if !errors.As(err, &me) {
			t.Errorf("Patch(%T %s) = %v, want a MismatchError", obj, obj.GetName(), err)
		}
	}
	if n.Writes() != 0 {
		t.Errorf("requests: %s", n)
	}
}

// Item 7: a Patcher whose object was deleted and recreated meanwhile does
// not write onto the new object, also when the retry re-reads it.
func TestPatchNeverWritesARecreatedObject(t *testing.T) {
	env.Require(t)
	for _, tc := range []struct {
		name   string
		change func(w *testapi.Widget)
	}{
		{"spec only (no lock)", func(w *testapi.Widget) { w.Spec.Size = 9 }},
		{"finalizers (locked, rebased on re-read)", func(w *testapi.Widget) { w.Finalizers = []string{"test.steady.dev/mine"}; w.Spec.Size = 9 }},
		{"status", func(w *testapi.Widget) { w.Status.Phase = "Mine"; conditions.MarkTrue(w, "Mine", "Ok", "") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, c, _ := fixture(t)
			ctx := context.Background()
			p, _ := reconcile.NewPatcher(c, w)
			if err := env.Client.Delete(ctx, w.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			fresh := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name}, Spec: testapi.WidgetSpec{Size: 1}}
			if err := env.Client.Create(ctx, fresh); err != nil {
				t.Fatal(err)
			}
			tc.change(w)
			if err := p.Patch(ctx, w); err != nil {
				t.Fatalf("Patch = %v, want nil (the object is gone)", err)
			}
			got := get(t, fresh)
			if got.UID != fresh.UID || got.Spec.Size != 1 || len(got.Finalizers) != 0 || got.Status.Phase != "" {
				t.Errorf("the new object was written: %+v", got)
			}
		})
	}
}

func TestObjectDeletedMidReconcile(t *testing.T) {
	env.Require(t)
	w, c, _ := fixture(t)
	p, _ := reconcile.NewPatcher(c, w)
	if err := env.Client.Delete(context.Background(), w.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	conditions.MarkTrue(w, "Ready", "Ok", "")
	w.Spec.Size = 3
	if err := p.Patch(context.Background(), w); err != nil {
		t.Fatalf("Patch of a deleted object = %v, want nil", err)
	}
}

func TestRemovingTheLastFinalizerIsSuccess(t *testing.T) {
	env.Require(t)
	w, c, _ := fixture(t)
	ctx := context.Background()
	w.Finalizers = []string{"test.steady.dev/mine"}
	if err := c.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	w = get(t, w)
	p, _ := reconcile.NewPatcher(c, w)
	w.Finalizers = nil
	conditions.MarkFalse(w, "Ready", "Deleting", "")
	if err := p.Patch(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), &testapi.Widget{}); !apierrors.IsNotFound(err) {
		t.Errorf("object still there: %v", err)
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

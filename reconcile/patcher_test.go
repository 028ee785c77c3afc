package reconcile_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
	"github.com/steadyk8s/steady/testenv"
)

var env = testapi.NewEnv(testenv.WithCRDPaths{"testdata"}, testenv.WithScheme{Scheme: thingScheme()})

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// fixture creates a Widget with a condition and returns it as read, with a
// counting client.
func fixture(t *testing.T) (*testapi.Widget, client.Client, *testapi.Counter) {
	t.Helper()
	ctx := context.Background()
	c, n, err := testapi.NewCountingClient(env.Config, env.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}, Spec: testapi.WidgetSpec{Size: 1, Color: "red"}}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	conditions.MarkTrue(w, "Synced", "Done", "")
	w.Status.Phase = "Running"
	if err := c.Status().Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	n.Reset()
	return w, c, n
}

func get(t *testing.T, w *testapi.Widget) *testapi.Widget {
	t.Helper()
	var got testapi.Widget
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(w), &got); err != nil {
		t.Fatal(err)
	}
	return &got
}

func TestRequestsPerChange(t *testing.T) {
	env.Require(t)
	for _, tc := range []struct {
		name      string
		change    func(w *testapi.Widget)
		wantPatch int
		check     func(t *testing.T, got *testapi.Widget)
	}{
		{"nothing changed", func(w *testapi.Widget) {}, 0, nil},
		{"same conditions marked again", func(w *testapi.Widget) {
			conditions.MarkTrue(w, "Synced", "Done", "")
			w.Status.Phase = "Running"
		}, 0, nil},
		{"spec only", func(w *testapi.Widget) { w.Spec.Size = 5 }, 1,
			func(t *testing.T, got *testapi.Widget) {
				if got.Spec.Size != 5 {
					t.Errorf("spec.size = %d", got.Spec.Size)
				}
			}},
		{"metadata only", func(w *testapi.Widget) { w.Labels = map[string]string{"team": "a"} }, 1,
			func(t *testing.T, got *testapi.Widget) {
				if got.Labels["team"] != "a" {
					t.Errorf("labels = %v", got.Labels)
				}
			}},
		{"status only", func(w *testapi.Widget) {
			conditions.MarkFalse(w, "Synced", "Failed", "boom")
			w.Status.Replicas = 3
		}, 1, func(t *testing.T, got *testapi.Widget) {
			if got.Status.Replicas != 3 || !conditions.IsFalse(got, "Synced") {
				t.Errorf("status = %+v", got.Status)
			}
		}},
		{"spec and status", func(w *testapi.Widget) {
			w.Spec.Color = "blue"
			conditions.MarkTrue(w, "Ready", "Ok", "")
		}, 2, func(t *testing.T, got *testapi.Widget) {
			if got.Spec.Color != "blue" || !conditions.IsTrue(got, "Ready") || !conditions.IsTrue(got, "Synced") {
				t.Errorf("object = %+v", got)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, c, n := fixture(t)
			p, err := reconcile.NewPatcher(c, w)
			if err != nil {
				t.Fatal(err)
			}
			tc.change(w)
			if err := p.Patch(context.Background(), w); err != nil {
				t.Fatal(err)
			}
			if n.Get("PATCH") != tc.wantPatch || n.Writes() != tc.wantPatch || n.Get("GET") != 0 {
				t.Errorf("requests: %s, want PATCH=%d and nothing else", n, tc.wantPatch)
			}
			if tc.check != nil {
				got := get(t, w)
				tc.check(t, got)
				if w.ResourceVersion != got.ResourceVersion {
					t.Errorf("in-memory resourceVersion %s, stored %s", w.ResourceVersion, got.ResourceVersion)
				}
			}
		})
	}
}

// TestStatusIsOneWrite shows conditions, observedGeneration and the rest of
// status going out together in a single request.
func TestStatusIsOneWrite(t *testing.T) {
	env.Require(t)
	w, c, n := fixture(t)
	p, _ := reconcile.NewPatcher(c, w)
	conditions.MarkTrue(w, "Ready", "Ok", "")
	w.Status.Phase = "Done"
	w.Status.Replicas = 2
	if err := p.Patch(context.Background(), w, reconcile.WithObservedGeneration{}); err != nil {
		t.Fatal(err)
	}
	if n.Get("PATCH") != 1 || n.Writes() != 1 {
		t.Errorf("requests: %s, want one PATCH", n)
	}
	got := get(t, w)
	if got.Status.ObservedGeneration == 0 || got.Status.ObservedGeneration != got.Generation || got.Status.Phase != "Done" || got.Status.Replicas != 2 || !conditions.IsTrue(got, "Ready") {
		t.Errorf("status = %+v", got.Status)
	}
}

func TestConcurrentWriterUnrelatedFieldSurvives(t *testing.T) {
	env.Require(t)
	w, c, _ := fixture(t)
	p, _ := reconcile.NewPatcher(c, w)
	other := w.DeepCopy()
	other.Spec.Owner = "someone"
	other.Status.Replicas = 9
	if err := env.Client.Update(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	other = get(t, other)
	other.Status.Replicas = 9
	if err := env.Client.Status().Update(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	w.Spec.Size = 4
	w.Status.Phase = "Scaling"
	if err := p.Patch(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	got := get(t, w)
	if got.Spec.Owner != "someone" || got.Spec.Size != 4 || got.Spec.Color != "red" {
		t.Errorf("spec = %+v", got.Spec)
	}
	if got.Status.Replicas != 9 || got.Status.Phase != "Scaling" {
		t.Errorf("status = %+v", got.Status)
	}
}

// TestConflictingConditionWritesResolve has another writer change conditions
// between our read and our write: our changed types win, theirs stay.
func TestConflictingConditionWritesResolve(t *testing.T) {
	env.Require(t)
	w, c, n := fixture(t)
	ctx := context.Background()
	conditions.MarkTrue(w, "Owned", "Ours", "")
	if err := env.Client.Status().Update(ctx, w.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	w = get(t, w)
	n.Reset()
	p, _ := reconcile.NewPatcher(c, w)

	other := w.DeepCopy()
	conditions.MarkFalse(other, "Synced", "TheirReason", "") // we change it too: ours wins
	conditions.MarkTrue(other, "Theirs", "Added", "")        // only they touch it: stays
	conditions.MarkFalse(other, "Owned", "Meddled", "")      // we do not change it, but own it
	if err := env.Client.Status().Update(ctx, other); err != nil {
		t.Fatal(err)
	}

	conditions.MarkUnknown(w, "Synced", "OurReason", "")
	conditions.MarkTrue(w, "Mine", "Added", "")
	if err := p.Patch(ctx, w, reconcile.WithOwnedConditions{"Owned"}); err != nil {
		t.Fatal(err)
	}
	got := get(t, w)
	for typ, want := range map[string]string{"Synced": "OurReason", "Theirs": "Added", "Mine": "Added", "Owned": "Ours"} {
		if c := conditions.Get(got, typ); c == nil || c.Reason != want {
			t.Errorf("condition %s = %+v, want reason %s", typ, c, want)
		}
	}
	if n.Get("PATCH") != 2 || n.Get("GET") != 1 {
		t.Errorf("requests %s: want a conflicting PATCH, a GET, a PATCH", n)
	}
}

// TestFinalizersOfOthersAreNeverDropped races another controller's finalizer
// change against ours, for an add and for a remove.
func TestFinalizersOfOthersAreNeverDropped(t *testing.T) {
	env.Require(t)
	w, c, _ := fixture(t)
	ctx := context.Background()
	p, _ := reconcile.NewPatcher(c, w)
	other := w.DeepCopy()
	other.Finalizers = []string{"other.example.com/f"}
	if err := env.Client.Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	w.Finalizers = append(w.Finalizers, "test.steady.dev/mine")
	w.Spec.Size = 2
	if err := p.Patch(ctx, w); err != nil {
		t.Fatal(err)
	}
	got := get(t, w)
	if !slices.Equal(got.Finalizers, []string{"other.example.com/f", "test.steady.dev/mine"}) || got.Spec.Size != 2 {
		t.Fatalf("after add: finalizers %v, size %d", got.Finalizers, got.Spec.Size)
	}

	p, _ = reconcile.NewPatcher(c, got)
	other = got.DeepCopy()
	other.Finalizers = append(other.Finalizers, "late.example.com/f")
	if err := env.Client.Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	got.Finalizers = slices.DeleteFunc(got.Finalizers, func(f string) bool { return f == "test.steady.dev/mine" })
	if err := p.Patch(ctx, got); err != nil {
		t.Fatal(err)
	}
	if f := get(t, w).Finalizers; !slices.Equal(f, []string{"other.example.com/f", "late.example.com/f"}) {
		t.Fatalf("after remove: finalizers %v", f)
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

func TestOptimisticLockReturnsTheConflict(t *testing.T) {
	env.Require(t)
	w, c, _ := fixture(t)
	p, _ := reconcile.NewPatcher(c, w)
	other := w.DeepCopy()
	other.Spec.Owner = "someone"
	if err := env.Client.Update(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	w.Spec.Size = 8
	err := p.Patch(context.Background(), w, reconcile.WithOptimisticLock{})
	if !apierrors.IsConflict(err) {
		t.Fatalf("Patch = %v, want a conflict", err)
	}
	if got := get(t, w); got.Spec.Size != 1 {
		t.Errorf("a conflicting patch still wrote: size %d", got.Spec.Size)
	}
}

func TestPatchOnExitJoinsErrors(t *testing.T) {
	env.Require(t)
	w, c, _ := fixture(t)
	p, _ := reconcile.NewPatcher(c, w)
	// The CRD allows only True, False and Unknown: the status write fails.
	w.Status.Conditions[0].Status = "Maybe"
	reconcileErr := errors.New("reconcile failed")
	err := reconcileErr
	p.PatchOnExit(context.Background(), w, &err)
	if !errors.Is(err, reconcileErr) || !apierrors.IsInvalid(err) {
		t.Errorf("PatchOnExit error = %v, want the reconcile error joined with the API server's Invalid", err)
	}
}

// TestStatusWithoutStatusSubresource patches an object whose CRD has a
// status field but no status subresource: status must not be dropped.
func TestStatusWithoutStatusSubresource(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "plainwidgets.test.steady.dev"},
		"spec": map[string]any{"group": "test.steady.dev", "scope": "Namespaced",
			"names": map[string]any{"kind": "PlainWidget", "plural": "plainwidgets", "singular": "plainwidget", "listKind": "PlainWidgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
	}}
	if err := env.Client.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("test.steady.dev/v1")
	obj.SetKind("PlainWidget")
	obj.SetNamespace(env.Namespace(t))
	obj.SetName("p")
	deadline := time.Now().Add(30 * time.Second)
	for err := env.Client.Create(ctx, obj.DeepCopy()); err != nil; err = env.Client.Create(ctx, obj.DeepCopy()) {
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	p, err := reconcile.NewPatcher(env.Client, obj)
	if err != nil {
		t.Fatal(err)
	}
	s, err := conditions.ForUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	conditions.MarkTrue(s, "Ready", "Ok", "")
	if err := unstructured.SetNestedField(obj.Object, "Running", "status", "phase"); err != nil {
		t.Fatal(err)
	}
	if err := p.Patch(ctx, obj); err != nil {
		t.Fatal(err)
	}
	got := obj.DeepCopy()
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
	gs, _ := conditions.ForUnstructured(got)
	if phase != "Running" || !conditions.IsTrue(gs, "Ready") {
		t.Errorf("status dropped: %v", got.Object["status"])
	}
}

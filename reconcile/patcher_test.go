package reconcile_test

import (
	"context"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
	"github.com/steadyk8s/steady/testenv"
)

// API: a Patcher used twice, with optimistic locking, does not conflict
// with its own first write.
func TestPatcherIsReusable(t *testing.T) {
	env.Require(t)
	w, c, n := fixture(t)
	ctx := context.Background()
	p, _ := reconcile.NewPatcher(c, w)
	conditions.MarkTrue(w, "Reconciling", "Started", "")
	if err := p.Patch(ctx, w, reconcile.WithOptimisticLock{}); err != nil {
		t.Fatal(err)
	}
	conditions.Delete(w, "Reconciling")
	conditions.MarkTrue(w, "Ready", "Done", "")
	w.Spec.Size = 7
	if err := p.Patch(ctx, w, reconcile.WithOptimisticLock{}); err != nil {
		t.Fatalf("second Patch = %v", err)
	}
	got := get(t, w)
	if conditions.Get(got, "Reconciling") != nil || !conditions.IsTrue(got, "Ready") || got.Spec.Size != 7 {
		t.Errorf("object = %+v", got)
	}
	if n.Get("PATCH") != 3 || n.Get("GET") != 0 {
		t.Errorf("requests %s, want 3 PATCHes", n)
	}
	n.Reset()
	if err := p.Patch(ctx, w); err != nil || n.Writes() != 0 {
		t.Errorf("third Patch without change: %v, requests %s", err, n)
	}
}

// API: after a write, a Patcher diffs against what it wrote, not against
// its first snapshot: a field set back to its first value is a change
// (diffed against the first snapshot it would be none, and the object would
// keep the intermediate value).
func TestPatcherDiffsAgainstItsLastWrite(t *testing.T) {
	env.Require(t)
	w, c, n := fixture(t)
	ctx := context.Background()
	p, _ := reconcile.NewPatcher(c, w)
	w.Spec.Color, w.Status.Phase = "blue", "Scaling"
	if err := p.Patch(ctx, w); err != nil {
		t.Fatal(err)
	}
	w.Spec.Color, w.Status.Phase = "red", "Running"
	if err := p.Patch(ctx, w); err != nil {
		t.Fatal(err)
	}
	if got := get(t, w); got.Spec.Color != "red" || got.Status.Phase != "Running" {
		t.Errorf("after setting back: color %q, phase %q, want red, Running", got.Spec.Color, got.Status.Phase)
	}
	if n.Get("PATCH") != 4 {
		t.Errorf("requests %s, want 4 PATCHes", n)
	}
}

var env = testapi.NewEnv(testenv.WithCRDs{Paths: []string{"testdata"}}, testenv.WithScheme{Scheme: thingScheme()})

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
			if got.Status.Replicas != 3 || !isFalse(got, "Synced") {
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

package reconcile_test

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/observe"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// TestReadyFlipsAreRecordedAsEvents: an Event for each write that flips
// Ready, none for a write that leaves it, none without a write.
func TestReadyFlipsAreRecordedAsEvents(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(10)
	events := reconcile.WithEvents{Recorder: rec}
	p, err := reconcile.NewPatcher(env.Client, w)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		name   string
		change func()
		want   string // "" for no event
	}{
		{"ready", func() { conditions.MarkTrue(w, "Ready", "Provisioned", "all %d up", 3) }, "Normal Ready Provisioned: all 3 up"},
		{"same again", func() { conditions.MarkTrue(w, "Ready", "Provisioned", "all %d up", 3) }, ""},
		{"other field", func() { w.Status.Phase = "Running" }, ""},
		{"not ready", func() { conditions.MarkFalse(w, "Ready", "BucketMissing", "bucket gone") }, "Warning NotReady BucketMissing: bucket gone"},
		{"unknown", func() { conditions.MarkUnknown(w, "Ready", "Checking", "") }, "Warning NotReady Checking: "},
	} {
		step.change()
		if err := p.Patch(ctx, w, events); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		select {
		case got := <-rec.Events:
			if got != step.want {
				t.Errorf("%s: event %q, want %q", step.name, got, step.want)
			}
		default:
			if step.want != "" {
				t.Errorf("%s: no event, want %q", step.name, step.want)
			}
		}
	}
}

// TestRequestsAreCounted: the requests a Patch makes show in
// steady_requests_total by helper and verb, and its writes in the log at
// V(1) with what they changed.
func TestRequestsAreCounted(t *testing.T) {
	env.Require(t)
	var lines []string
	ctx := logf.IntoContext(context.Background(), funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 1}))
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	count := func(verb string) float64 {
		return testutil.ToFloat64(observe.Requests.WithLabelValues("reconcile", verb))
	}
	statusBefore, patchBefore := count("status-patch"), count("patch")
	p, err := reconcile.NewPatcher(env.Client, w)
	if err != nil {
		t.Fatal(err)
	}
	w.Status.Phase = "Running"
	w.Labels = map[string]string{"tier": "gold"}
	if err := p.Patch(ctx, w); err != nil {
		t.Fatal(err)
	}
	if d := count("status-patch") - statusBefore; d != 1 {
		t.Errorf("status patches counted: %v, want 1", d)
	}
	if d := count("patch") - patchBefore; d != 1 {
		t.Errorf("patches counted: %v, want 1", d)
	}
	joined := strings.Join(lines, "\n")
	for _, want := range []string{`"changed"=["status"]`, `"changed"=["metadata"]`, `"object"="Widget ` + w.Namespace + `/w"`} {
		if !strings.Contains(joined, want) {
			t.Errorf("log lacks %s:\n%s", want, joined)
		}
	}
}

// TestUnstructuredWithGoValues: an unstructured object into which code
// wrote Go values (an int, a []string), as the JSON encoder takes them, is
// patched like any other; runtime.DeepCopyJSON would panic on them.
func TestUnstructuredWithGoValues(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(testapi.GroupVersion.WithKind("Widget"))
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), u); err != nil {
		t.Fatal(err)
	}
	u.Object["spec"] = map[string]any{"size": 7}
	p, err := reconcile.NewPatcher(env.Client, u)
	if err != nil {
		t.Fatal(err)
	}
	u.Object["spec"] = map[string]any{"size": 3}
	u.Object["status"] = map[string]any{"namespaces": []string{"a", "b"}}
	if err := p.Patch(ctx, u); err != nil {
		t.Fatal(err)
	}
	got := get(t, w)
	if got.Spec.Size != 3 || len(got.Status.Namespaces) != 2 {
		t.Errorf("stored %+v / %+v", got.Spec, got.Status)
	}
}

// TestNoWriteWhenTheLatestAlreadyHoldsTheChange: a Patch from a stale
// snapshot conflicts, re-reads, and finds that the API server already holds
// what this reconcile set (conditions, observedGeneration): nothing is left
// to send, so no second PATCH.
func TestNoWriteWhenTheLatestAlreadyHoldsTheChange(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	stale := w.DeepCopy()
	conditions.MarkTrue(w, "Ready", "Done", "")
	w.Status.ObservedGeneration = w.Generation
	if err := env.Client.Status().Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	c, n, err := testapi.NewCountingClient(env.Config, env.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	p, err := reconcile.NewPatcher(c, stale)
	if err != nil {
		t.Fatal(err)
	}
	stale.Status.Conditions = w.DeepCopy().Status.Conditions // the same marks, as the reconcile computes them
	if err := p.Patch(ctx, stale, reconcile.WithObservedGeneration{}); err != nil {
		t.Fatal(err)
	}
	if n.Get("PATCH") != 1 || n.Writes() != 1 {
		t.Errorf("requests %s: want the conflicting PATCH and no second one", n)
	}
}

package reconcile_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

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
// steady_requests_total by helper, verb and subresource, and its writes in
// the log at V(1) with what they changed, the object under its kind as
// controller-runtime's loggers name it.
func TestRequestsAreCounted(t *testing.T) {
	env.Require(t)
	var lines []string
	ctx := logf.IntoContext(context.Background(), funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 1}))
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	count := func(verb, sub string) float64 {
		return testutil.ToFloat64(observe.Requests.WithLabelValues("reconcile", verb, sub, "false"))
	}
	statusBefore, patchBefore := count("patch", "status"), count("patch", "")
	p, err := reconcile.NewPatcher(env.Client, w)
	if err != nil {
		t.Fatal(err)
	}
	w.Status.Phase = "Running"
	w.Labels = map[string]string{"tier": "gold"}
	if err := p.Patch(ctx, w); err != nil {
		t.Fatal(err)
	}
	if d := count("patch", "status") - statusBefore; d != 1 {
		t.Errorf("status patches counted: %v, want 1", d)
	}
	if d := count("patch", "") - patchBefore; d != 1 {
		t.Errorf("patches counted: %v, want 1", d)
	}
	joined := strings.Join(lines, "\n")
	for _, want := range []string{`"changed"=["status"]`, `"changed"=["metadata"]`, `"Widget"={"name"="w" "namespace"="` + w.Namespace + `"}`} {
		if !strings.Contains(joined, want) {
			t.Errorf("log lacks %s:\n%s", want, joined)
		}
	}
}

// WithEvents records a flip this Patch wrote, not one another writer made
// meanwhile (which the answer shows), and records a flip that was written
// even when a later write of the same Patch failed.
func TestEventsOnlyForFlipsThisPatchWrote(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	t.Run("another writer flips Ready", func(t *testing.T) {
		w, c, _ := fixture(t)
		conditions.MarkFalse(w, "Ready", "Waiting", "")
		if err := env.Client.Status().Update(ctx, w); err != nil {
			t.Fatal(err)
		}
		w = get(t, w)
		rec := record.NewFakeRecorder(10)
		p, _ := reconcile.NewPatcher(c, w)
		other := get(t, w)
		conditions.MarkTrue(other, "Ready", "TheirsSaysSo", "")
		if err := env.Client.Status().Update(ctx, other); err != nil {
			t.Fatal(err)
		}
		w.Status.Phase = "Mine"
		if err := p.Patch(ctx, w, reconcile.WithEvents{Recorder: rec}); err != nil {
			t.Fatal(err)
		}
		select {
		case e := <-rec.Events:
			t.Errorf("event %q for a flip this Patch did not write", e)
		default:
		}
	})
	t.Run("the metadata write fails after the flip was written", func(t *testing.T) {
		w, _, _ := fixture(t)
		ww, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		c := interceptor.NewClient(ww, interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				return apierrors.NewInternalError(errors.New("etcd is sad"))
			},
		})
		rec := record.NewFakeRecorder(10)
		p, _ := reconcile.NewPatcher(c, w)
		conditions.MarkTrue(w, "Ready", "Up", "")
		w.Spec.Size = 7
		if err := p.Patch(ctx, w, reconcile.WithEvents{Recorder: rec}); err == nil {
			t.Fatal("want the metadata write's error")
		}
		if !conditions.IsTrue(get(t, w), "Ready") {
			t.Fatal("status not written")
		}
		select {
		case e := <-rec.Events:
			if e != "Normal Ready Up: " {
				t.Errorf("event %q", e)
			}
		default:
			t.Error("no event for the Ready flip that was written")
		}
	})
}

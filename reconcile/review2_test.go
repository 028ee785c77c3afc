package reconcile_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadyk8s/steady/conditions"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// Dropping a whole parent of a further condition list (cluster-api v1beta2
// dropping status.deprecated) is a removal: the other fields under that
// parent must go too.
func TestRemovingTheParentOfAConditionList(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	u := createU(t, newUnstructured("Thing", env.Namespace(t), "t"))
	u = writeStatus(t, u, map[string]any{
		"phase": "Running",
		"deprecated": map[string]any{"v1beta1": map[string]any{
			"failureReason": "Boom",
			"conditions": []any{map[string]any{"type": "Ready", "status": "True", "severity": "",
				"lastTransitionTime": "2024-01-01T00:00:00Z"}},
		}},
	})
	for _, lists := range []bool{false, true} {
		obj := getU(t, u)
		if _, found, _ := unstructured.NestedMap(obj.Object, "status", "deprecated"); !found {
			obj = writeStatus(t, obj, map[string]any{"phase": "Running", "deprecated": map[string]any{"v1beta1": map[string]any{
				"failureReason": "Boom",
				"conditions":    []any{map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}},
			}}})
		}
		p, _ := reconcile.NewPatcher(env.Client, obj)
		unstructured.RemoveNestedField(obj.Object, "status", "deprecated")
		var opts []reconcile.PatchOption
		if lists {
			opts = append(opts, reconcile.WithConditionLists{"status.deprecated.v1beta1.conditions"})
		}
		if err := p.Patch(ctx, obj, opts...); err != nil {
			t.Fatal(err)
		}
		got := getU(t, u)
		if d, found, _ := unstructured.NestedFieldNoCopy(got.Object, "status", "deprecated"); found {
			t.Errorf("WithConditionLists %v: status.deprecated removed, stored %v", lists, d)
		}
	}
}

// A kind without a status subresource, status and spec changed in one
// Patch with WithObservedGeneration: the status written with the object
// and then the spec written apart bump the generation twice, and the
// observedGeneration recorded is already behind when Patch returns.
func TestObservedGenerationWithSpecWithoutStatusSubresource(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	u := createU(t, newUnstructured("PlainThing", env.Namespace(t), "p"))
	c, n, _ := testapi.NewCountingClient(env.Config, env.Scheme)
	obj := getU(t, u)
	p, _ := reconcile.NewPatcher(c, obj)
	_ = unstructured.SetNestedField(obj.Object, int64(3), "spec", "replicas")
	_ = unstructured.SetNestedField(obj.Object, "Running", "status", "phase")
	if err := p.Patch(ctx, obj, reconcile.WithObservedGeneration{}); err != nil {
		t.Fatal(err)
	}
	got := getU(t, u)
	og, _, _ := unstructured.NestedInt64(got.Object, "status", "observedGeneration")
	r, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas")
	if og != got.GetGeneration() || r != 3 {
		t.Errorf("generation %d, observedGeneration %d, spec.replicas %d", got.GetGeneration(), og, r)
	}
	if n.Get("PATCH") > 2 || n.Get("GET") != 0 {
		t.Errorf("requests %s, want the status subresource's 404 and one PATCH", n)
	}
	// A label alone, observedGeneration current: no generation bump.
	n.Reset()
	obj = getU(t, u)
	p, _ = reconcile.NewPatcher(c, obj)
	obj.SetLabels(map[string]string{"team": "a"})
	_ = unstructured.SetNestedField(obj.Object, "Labelled", "status", "phase")
	if err := p.Patch(ctx, obj, reconcile.WithObservedGeneration{}); err != nil {
		t.Fatal(err)
	}
	got2 := getU(t, u)
	og2, _, _ := unstructured.NestedInt64(got2.Object, "status", "observedGeneration")
	if og2 != got2.GetGeneration() || got2.GetLabels()["team"] != "a" {
		t.Errorf("label and phase: generation %d -> %d, observedGeneration %d, labels %v", got.GetGeneration(), got2.GetGeneration(), og2, got2.GetLabels())
	}
	// And the next reconcile, with nothing to change, writes nothing.
	n.Reset()
	obj = getU(t, u)
	p, _ = reconcile.NewPatcher(c, obj)
	_ = unstructured.SetNestedField(obj.Object, "Labelled", "status", "phase")
	if err := p.Patch(ctx, obj, reconcile.WithObservedGeneration{}); err != nil {
		t.Fatal(err)
	}
	if n.Writes() != 0 {
		t.Errorf("a no-op reconcile after it: requests %s", n)
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

// The docs promise that conditions this reconcile did not touch stay "byte
// for byte as the latest writer has it, whatever its shape". Through a Go
// type whose condition struct lacks a field another writer sets (a CRD
// schema newer than the controller's types, cluster-api's severity read as
// metav1.Condition), the rebased list is built from the typed snapshot and
// answers, which dropped the field, and sent whole.
func TestTypedConditionsKeepOthersUnknownFields(t *testing.T) {
	env.Require(t)
	t.Skip("BUG (documented as a limitation): a typed object's condition list is rebased on typed reads, which drop " +
		"fields the Go type lacks, and sent whole: another writer's extra fields (severity, lastProbeTime) on entries " +
		"this reconcile did not touch are lost. A fix needs the raw JSON of the latest state (an unstructured read: " +
		"a GET more per Patch, or an informer more) or per-entry JSON Patch ops instead of a merge patch")
	ctx := context.Background()
	u := createU(t, newUnstructured("Thing", env.Namespace(t), "t"))
	writeStatus(t, u, map[string]any{"conditions": []any{map[string]any{
		"type": "Theirs", "status": "True", "reason": "Set", "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z",
		"severity": "Info", "lastProbeTime": "2024-01-02T00:00:00Z",
	}}})
	var th Thing
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), &th); err != nil {
		t.Fatal(err)
	}
	p, _ := reconcile.NewPatcher(env.Client, &th)
	th.Status.Conditions = append(th.Status.Conditions, metav1.Condition{Type: "Mine", Status: metav1.ConditionTrue,
		Reason: "Set", LastTransitionTime: metav1.Now()})
	if err := p.Patch(ctx, &th); err != nil {
		t.Fatal(err)
	}
	got := getU(t, u)
	list, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
	for _, c := range list {
		if m := c.(map[string]any); m["type"] == "Theirs" && (m["severity"] != "Info" || m["lastProbeTime"] == nil) {
			t.Errorf("their condition lost fields: %v", m)
		}
	}
}

// A write whose error did not come from the API server (a timeout, a
// dropped connection) may have been applied: the error must not say that
// nothing was written.
func TestPatchErrorOfATimeoutDoesNotClaimNothingWasWritten(t *testing.T) {
	env.Require(t)
	w, _, _ := fixture(t)
	ww, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	c := interceptor.NewClient(ww, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := c.SubResource(sub).Patch(ctx, obj, patch, opts...); err != nil {
				return err
			}
			return context.DeadlineExceeded // the answer never came
		},
	})
	p, _ := reconcile.NewPatcher(c, w)
	w.Status.Phase = "Landed"
	err = p.Patch(context.Background(), w)
	var pe *reconcile.PatchError
	if !errors.As(err, &pe) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if get(t, w).Status.Phase != "Landed" {
		t.Fatal("the write did not land; the test needs it to")
	}
	if !pe.Unsure || strings.Contains(err.Error(), "nothing was written)") {
		t.Errorf("err = %q (Unsure %v): claims nothing was written, but the write landed", err, pe.Unsure)
	}
}

// A field at a condition-list path that is not a list (an object keyed by
// type, a string: some APIs do that) is an ordinary field: its change is
// written, not dropped from the patch as a list that never changes.
func TestNonListAtAConditionPathIsWritten(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	u := createU(t, newUnstructured("Thing", env.Namespace(t), "t"))
	u = writeStatus(t, u, map[string]any{"conditions": map[string]any{"Ready": "False"}})
	p, _ := reconcile.NewPatcher(env.Client, u)
	_ = unstructured.SetNestedField(u.Object, "True", "status", "conditions", "Ready")
	if err := p.Patch(ctx, u); err != nil {
		t.Fatal(err)
	}
	got := getU(t, u)
	if v, _, _ := unstructured.NestedString(got.Object, "status", "conditions", "Ready"); v != "True" {
		t.Errorf("status.conditions = %v", got.Object["status"])
	}
}

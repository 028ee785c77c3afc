package reconcile_test

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

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

// Item 1: a finalizer another writer added after our read survives a Patch
// that writes status and metadata.
func TestStatusAndFinalizerKeepAForeignFinalizer(t *testing.T) {
	env.Require(t)
	for _, tc := range []struct {
		name   string
		status func(w *testapi.Widget)
	}{
		{"status field", func(w *testapi.Widget) { w.Status.Phase = "Ready" }},
		{"condition", func(w *testapi.Widget) { conditions.MarkTrue(w, "Ready", "Ok", "") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, c, n := fixture(t)
			ctx := context.Background()
			p, _ := reconcile.NewPatcher(c, w)
			other := get(t, w)
			other.Finalizers = append(other.Finalizers, "other.io/x")
			if err := env.Client.Update(ctx, other); err != nil {
				t.Fatal(err)
			}
			n.Reset()
			w.Finalizers = append(w.Finalizers, "test.steady.dev/mine")
			tc.status(w)
			want := w.DeepCopy().Status
			if err := p.Patch(ctx, w); err != nil {
				t.Fatal(err)
			}
			got := get(t, w)
			if !slices.Equal(got.Finalizers, []string{"other.io/x", "test.steady.dev/mine"}) {
				t.Errorf("finalizers = %v, want other.io/x and ours", got.Finalizers)
			}
			if got.Status.Phase != want.Phase || len(got.Status.Conditions) != len(want.Conditions) {
				t.Errorf("status = %+v", got.Status)
			}
			t.Logf("requests: %s", n)
		})
	}
}

// Item 1: an ownerReference another writer added after our read survives
// our label change and our own reference.
func TestForeignOwnerReferenceSurvives(t *testing.T) {
	env.Require(t)
	w, c, _ := fixture(t)
	ctx := context.Background()
	p, _ := reconcile.NewPatcher(c, w)
	ref := func(name, uid string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: types.UID(uid)}
	}
	other := get(t, w)
	other.OwnerReferences = append(other.OwnerReferences, ref("theirs", "11111111-1111-1111-1111-111111111111"))
	if err := env.Client.Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	w.Labels = map[string]string{"team": "a"}
	w.OwnerReferences = append(w.OwnerReferences, ref("ours", "22222222-2222-2222-2222-222222222222"))
	if err := p.Patch(ctx, w); err != nil {
		t.Fatal(err)
	}
	got := get(t, w)
	var names []string
	for _, r := range got.OwnerReferences {
		names = append(names, r.Name)
	}
	if !slices.Equal(names, []string{"theirs", "ours"}) || got.Labels["team"] != "a" {
		t.Errorf("ownerReferences %v, labels %v", names, got.Labels)
	}

	// And removing ours leaves theirs.
	p, _ = reconcile.NewPatcher(c, got)
	got.OwnerReferences = got.OwnerReferences[:1]
	if err := p.Patch(ctx, got); err != nil {
		t.Fatal(err)
	}
	if refs := get(t, w).OwnerReferences; len(refs) != 1 || refs[0].Name != "theirs" {
		t.Errorf("after removing ours: %v", refs)
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

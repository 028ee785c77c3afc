package reconcile_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// A kind without a status subresource, where every status write bumps the
// generation: conditions set with conditions.MarkTrue carry the generation
// they observed, so the condition written at generation n is one behind
// once the write made n+1. Reconciles that change nothing must stop
// writing, with and without WithObservedGeneration (each write used to
// bump the generation, and the next reconcile restamped the condition:
// a write and a generation on every reconcile, for ever).
func TestNoWriteLoopOfConditionsWithoutStatusSubresource(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	for _, withOG := range []bool{true, false} {
		t.Run(fmt.Sprintf("WithObservedGeneration %v", withOG), func(t *testing.T) {
			u := createU(t, newUnstructured("PlainThing", env.Namespace(t), "p"))
			c, n, err := testapi.NewCountingClient(env.Config, env.Scheme)
			must(t, err)
			var opts []reconcile.PatchOption
			if withOG {
				opts = append(opts, reconcile.WithObservedGeneration{})
			}
			reconcileOnce := func(phase string) {
				t.Helper()
				obj := getU(t, u)
				p, err := reconcile.NewPatcher(c, obj)
				must(t, err)
				s, err := conditions.ForUnstructured(obj)
				must(t, err)
				conditions.MarkTrue(s, "Ready", "Done", "")
				must(t, unstructured.SetNestedField(obj.Object, phase, "status", "phase"))
				must(t, p.Patch(ctx, obj, opts...))
			}
			for i, phase := range []string{"One", "One", "Two", "Two"} {
				reconcileOnce(phase)
				t.Logf("reconcile %d (phase %s): requests %s", i, phase, n)
			}
			n.Reset()
			for range 3 {
				reconcileOnce("Two")
			}
			got := getU(t, u)
			if n.Writes() != 0 {
				t.Errorf("3 reconciles that change nothing: requests %s (generation now %d): a write loop", n, got.GetGeneration())
			}
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			og, _, _ := unstructured.NestedInt64(conds[0].(map[string]any), "observedGeneration")
			if og != got.GetGeneration() {
				t.Errorf("Ready observed generation %d, the object is at %d", og, got.GetGeneration())
			}
			if sog, _, _ := unstructured.NestedInt64(got.Object, "status", "observedGeneration"); withOG && sog != got.GetGeneration() {
				t.Errorf("status.observedGeneration %d, the object is at %d", sog, got.GetGeneration())
			}
		})
	}
}

// Two controllers each keep the condition list in their own order (one by
// type, the other its own conditions first) and reconcile from fresh reads,
// each write waking the other. A list whose entries are all as stored, in
// another order, is no change: neither writes once both conditions are
// there (each used to rewrite the order the other had just written, on
// every reconcile, for ever).
func TestAnOrderAloneIsNoWrite(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	w, c, n := fixture(t) // Synced
	byType := func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) }
	reconcileAs := func(mine string, order func(a, b metav1.Condition) int) {
		t.Helper()
		obj := get(t, w)
		p, err := reconcile.NewPatcher(c, obj)
		must(t, err)
		conditions.MarkTrue(obj, mine, "Done", "")
		slices.SortStableFunc(obj.Status.Conditions, order)
		must(t, p.Patch(ctx, obj))
	}
	mineFirst := func(mine string) func(a, b metav1.Condition) int {
		return func(a, b metav1.Condition) int {
			switch {
			case a.Type == mine && b.Type != mine:
				return -1
			case b.Type == mine && a.Type != mine:
				return 1
			}
			return byType(a, b)
		}
	}
	reconcileAs("Alpha", byType)
	reconcileAs("Zulu", mineFirst("Zulu"))
	n.Reset()
	for range 3 {
		reconcileAs("Alpha", byType)
		reconcileAs("Zulu", mineFirst("Zulu"))
	}
	if n.Writes() != 0 {
		t.Errorf("6 reconciles that change no condition: requests %s, stored order %v: a write loop", n, condTypes(get(t, w).Status.Conditions))
	}
	got := get(t, w)
	for _, typ := range []string{"Alpha", "Synced", "Zulu"} {
		if !conditions.IsTrue(got, typ) {
			t.Errorf("%s lost: %v", typ, condTypes(got.Status.Conditions))
		}
	}
}

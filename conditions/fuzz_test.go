package conditions_test

import (
	"errors"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
)

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// FuzzMarks applies a random sequence of marks and deletes and checks the
// invariants after each: one entry per type, a stable order that does not
// depend on history, LastTransitionTime moving only on a status flip, and
// every operation idempotent.
func FuzzMarks(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{17, 17, 33, 33, 49, 2, 200, 5})
	types := []string{"Ready", "Available", "Deleting", "Paused", "DatabaseReady", "BackupReady", "Synced"}
	statuses := []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}
	reasons := []string{"A", "B"}
	f.Fuzz(func(t *testing.T, ops []byte) {
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Generation: 1}}
		for i, op := range ops {
			typ := types[int(op)%len(types)]
			before := w.DeepCopy()
			prev := conditions.Get(before, typ)
			apply := func() bool {
				switch (op / 7) % 5 {
				case 0, 1, 2:
					return conditions.Set(w, metav1.Condition{Type: typ, Status: statuses[int(op/7)%3], Reason: reasons[int(op/35)%2]})
				case 3:
					return conditions.Delete(w, typ)
				default:
					w.Generation = int64(i + 2)
					return conditions.SetSummary(w, "Ready", conditions.SummaryOptions{ConditionTypes: []string{"DatabaseReady", "BackupReady"}})
				}
			}
			changed := apply()
			if changed == equality.Semantic.DeepEqual(before, w) {
				t.Fatalf("op %d: reported changed=%v, but deep-equal=%v", i, changed, !changed)
			}
			afterOnce := w.DeepCopy()
			gen := w.Generation
			if apply() || !equality.Semantic.DeepEqual(afterOnce, w) || w.Generation != gen {
				t.Fatalf("op %d is not idempotent", i)
			}
			seen := map[string]bool{}
			var names []string
			for _, c := range w.Status.Conditions {
				if seen[c.Type] {
					t.Fatalf("op %d: type %s twice", i, c.Type)
				}
				seen[c.Type] = true
				names = append(names, c.Type)
			}
			if !slices.Equal(names, canonicalOrder(names)) {
				t.Fatalf("op %d: order %v is not the canonical %v", i, names, canonicalOrder(names))
			}
			if now := conditions.Get(w, typ); prev != nil && now != nil && prev.Status == now.Status && !prev.LastTransitionTime.Equal(&now.LastTransitionTime) {
				t.Fatalf("op %d: LastTransitionTime of %s moved without a flip", i, typ)
			}
		}
	})
}

// canonicalOrder is the documented order: Available, Ready first; Deleting,
// Paused last; the rest alphabetical.
func canonicalOrder(names []string) []string {
	rank := func(s string) int {
		switch s {
		case "Available":
			return 0
		case "Ready":
			return 1
		case "Deleting":
			return 3
		case "Paused":
			return 4
		}
		return 2
	}
	out := slices.Clone(names)
	slices.SortStableFunc(out, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		if a < b {
			return -1
		} else if a > b {
			return 1
		}
		return 0
	})
	return out
}

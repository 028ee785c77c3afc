package conditions

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSetSortsAsSortSliceStable: Set's slices.SortStableFunc with compare
// orders any list of conditions (up to 40, duplicate types from another
// writer, every rank, in any order) as sort.SliceStable with less did, ties
// kept in their order.
func TestSetSortsAsSortSliceStable(t *testing.T) {
	types := []string{"Available", Ready, "Deleting", "Paused", "A", "Zed", "Progressing", ""}
	r := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		var conds []metav1.Condition
		for i := range r.IntN(40) {
			// Message tells duplicates apart, so that a tie's order shows.
			conds = append(conds, metav1.Condition{Type: types[r.IntN(len(types))], Message: string(rune('a' + i))})
		}
		want := slices.Clone(conds)
		sort.SliceStable(want, func(i, j int) bool { return less(want[i], want[j]) })
		obj := &lister{}
		obj.conds = conds
		Set(obj, metav1.Condition{Type: "Zed", Status: metav1.ConditionTrue, Reason: "R", Message: obj.zedMessage()})
		got := obj.conds
		// Set also set "Zed": the same on want.
		if !hasType(want, "Zed") {
			want = append(want, metav1.Condition{Type: "Zed"})
			sort.SliceStable(want, func(i, j int) bool { return less(want[i], want[j]) })
		}
		if len(got) != len(want) {
			t.Fatalf("%d conditions, want %d", len(got), len(want))
		}
		for i := range got {
			if got[i].Type != want[i].Type || (got[i].Type != "Zed" && got[i].Message != want[i].Message) {
				t.Fatalf("order %v, want %v", typesOf(got), typesOf(want))
			}
		}
	}
}

// less is the order Set sorted by before compare: Available and Ready
// first, Deleting and Paused last, the rest alphabetical.
func less(a, b metav1.Condition) bool {
	ra, rb := rank(a.Type), rank(b.Type)
	return ra < rb || (ra == rb && a.Type < b.Type)
}

type lister struct{ conds []metav1.Condition }

func (l *lister) GetConditions() []metav1.Condition  { return l.conds }
func (l *lister) SetConditions(c []metav1.Condition) { l.conds = c }

// zedMessage keeps the message of the first "Zed" condition, if any.
func (l *lister) zedMessage() string {
	for _, c := range l.conds {
		if c.Type == "Zed" {
			return c.Message
		}
	}
	return "z"
}

func hasType(cs []metav1.Condition, t string) bool {
	return slices.ContainsFunc(cs, func(c metav1.Condition) bool { return c.Type == t })
}

func typesOf(cs []metav1.Condition) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Type+"/"+c.Message)
	}
	return out
}

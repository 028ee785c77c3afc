package patch

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestDroppedParentKeepsAnotherWritersEntries: our change drops the map
// that holds a rebased list (spec.deep, whose conds is a condition list),
// while another writer changed the list: the entries only the latest has
// (the other writer's) stay, as where the list itself is rebased, whether
// the map is removed whole (no key we did not read) or key by key (a key
// of the other writer's), and whatever the list held when read.
func TestDroppedParentKeepsAnotherWritersEntries(t *testing.T) {
	ours := map[string]any{"type": "A", "status": "True"}
	theirs := map[string]any{"type": "Theirs", "status": "True"}
	for _, tc := range []struct {
		name       string
		read, live []any
		theirKey   bool
		wantDeep   map[string]any // spec.deep as stored after the write
	}{
		{"ours replaced by theirs", []any{ours}, []any{theirs}, false, map[string]any{"conds": []any{theirs}}},
		{"theirs added to an empty list", []any{}, []any{theirs}, false, map[string]any{"conds": []any{theirs}}},
		{"theirs added beside ours", []any{ours}, []any{ours, theirs}, false, map[string]any{"conds": []any{theirs}}},
		{"ours replaced by theirs, a key of theirs", []any{ours}, []any{theirs}, true, map[string]any{"conds": []any{theirs}, "their": "x"}},
		{"theirs added to an empty list, a key of theirs", []any{}, []any{theirs}, true, map[string]any{"conds": []any{theirs}, "their": "x"}},
		{"nothing of theirs", []any{ours}, []any{ours}, false, nil},
		{"ours gone meanwhile", []any{ours}, []any{}, false, nil},
	} {
		snap := map[string]any{"apiVersion": "steady.dev/v1", "kind": "Thing",
			"metadata": map[string]any{"name": "w", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
			"spec":     map[string]any{"deep": map[string]any{"keep": "k", "conds": tc.read}, "size": int64(1)}}
		after := runtime.DeepCopyJSON(snap)
		delete(after["spec"].(map[string]any), "deep")
		s := &mapServer{stored: runtime.DeepCopyJSON(snap), rv: 7, conflicts: 1}
		s.other = func(m map[string]any) {
			deep := m["spec"].(map[string]any)["deep"].(map[string]any)
			deep["conds"] = runtime.DeepCopyJSONValue(tc.live)
			if tc.theirKey {
				deep["their"] = "x"
			}
		}
		w := Writer{Client: s.client(), Sleep: func(context.Context, time.Duration) error { return nil }}
		_, err := w.Patch(context.Background(), &unstructured.Unstructured{Object: snap}, &unstructured.Unstructured{Object: after},
			Options{ConditionLists: [][]string{{"spec", "deep", "conds"}}})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		got, _ := s.stored["spec"].(map[string]any)["deep"].(map[string]any)
		if !(len(got) == 0 && tc.wantDeep == nil) && !jsonEqualString(mustJSONOf(got), mustJSONOf(tc.wantDeep)) {
			t.Errorf("%s: spec.deep stored as %v, want %v (sent %q)", tc.name, got, tc.wantDeep, s.bodies)
		}
	}
}

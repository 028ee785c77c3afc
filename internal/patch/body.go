package patch

import (
	"encoding/json"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// body is the merge patch of p on latest, and whether it sends a list.
func (p *part) body(latest map[string]any, o Options) (map[string]any, bool, error) {
	body := runtime.DeepCopyJSON(p.diff)
	lists := false
	for _, l := range p.lists {
		cur, _ := nested(latest, l.path).([]any)
		out := l.rebase(cur)
		if equalList(out, cur) {
			continue
		}
		var v any
		if len(out) > 0 {
			v = out
		}
		if err := setList(body, latest, v, l.path); err != nil {
			return nil, false, err
		}
		lists = true
	}
	// After a conflict the latest object may already hold some of what
	// this reconcile changed (another writer, or our own earlier write
	// seen late, set it): such fields are no change, and a body left
	// empty is no write.
	dropApplied(body, latest)
	if p.fallback && o.ObservedGeneration {
		// Written with the object, status bumps the generation: record the
		// generation this write produces, and do not write for
		// observedGeneration alone once it is current.
		if s, ok := body["status"].(map[string]any); ok {
			delete(s, "observedGeneration")
			if len(s) == 0 {
				delete(body, "status")
			}
		}
		gen, _, _ := unstructured.NestedInt64(latest, "metadata", "generation")
		og, _, _ := unstructured.NestedInt64(latest, "status", "observedGeneration")
		bumps := false // a change outside metadata bumps the generation
		for k := range body {
			bumps = bumps || k != "metadata"
		}
		if bumps || og != gen {
			if err := setNested(body, gen+1, []string{"status", "observedGeneration"}); err != nil {
				return nil, false, err
			}
		}
	}
	return body, lists, nil
}

// dropApplied removes from the merge patch body every field that latest
// already holds with that value (a removal of a field latest lacks
// included), and the maps left empty by that.
func dropApplied(body, latest map[string]any) {
	for k, v := range body {
		have, ok := latest[k]
		switch v := v.(type) {
		case nil:
			if !ok || have == nil {
				delete(body, k)
			}
		case map[string]any:
			if h, isMap := have.(map[string]any); isMap {
				dropApplied(v, h)
				if len(v) == 0 {
					delete(body, k)
				}
			}
		default:
			if ok && reflect.DeepEqual(normalize(v), normalize(have)) {
				delete(body, k)
			}
		}
	}
}

// normalize makes numbers of either decoding comparable.
func normalize(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

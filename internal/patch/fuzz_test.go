package patch

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// FuzzMerge: a random object, our random change of it, and another
// writer's random additions made meanwhile (the latest object). The bodies
// the engine sends, applied to the latest object as the API server applies
// a merge patch, must keep every addition of the other writer, carry every
// change of ours, and apply. Run as a test it replays the seeds below;
// `go test -fuzz FuzzMerge ./internal/patch/` searches further.
func FuzzMerge(f *testing.F) {
	for seed := range uint64(64) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		before := randomObject(rng)
		after := runtime.DeepCopyJSON(before)
		ours(rng, after)
		latest := runtime.DeepCopyJSON(before)
		theirs := foreign(rng, latest)

		snap := runtime.DeepCopyJSON(before)
		parts, err := plan(snap, &unstructured.Unstructured{Object: after}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(snap, before) {
			t.Fatalf("plan changed the snapshot: %v, was %v", snap, before)
		}
		result := latest
		for _, p := range parts {
			body, _, stale, err := p.body(result, nil, nil, Options{})
			if err != nil || stale != "" {
				t.Fatalf("body: %v %q", err, stale)
			}
			if len(body) == 0 {
				continue
			}
			result = applyMerge(t, result, body)
		}
		for _, add := range theirs {
			if replacedByUs(before, after, add.path) {
				continue // we set the map they added to to a value: ours wins, by design
			}
			if got := nested(result, add.path); !reflect.DeepEqual(normalize(got), normalize(add.value)) {
				t.Errorf("another writer's %s = %v lost: now %v\nbefore %v\nafter %v\nlatest %v\nresult %v",
					strings.Join(add.path, "."), add.value, got, before, after, latest, result)
			}
		}
		for _, fin := range finalizersOf(latest) {
			if strings.HasPrefix(fin, "theirs") && !slices.Contains(finalizersOf(result), fin) {
				t.Errorf("another writer's finalizer %s lost", fin)
			}
		}
		for typ, c := range conditionsOf(latest) {
			if strings.HasPrefix(typ, "Theirs") && !reflect.DeepEqual(conditionsOf(result)[typ], c) {
				t.Errorf("another writer's condition %s lost\nbefore %v\nafter %v\nlatest %v\nresult %v", typ, before, after, latest, result)
			}
		}
		// Ours: every leaf we changed holds our value; every leaf we
		// removed is gone.
		for _, l := range leaves(after, nil) {
			if b := nested(before, l.path); !reflect.DeepEqual(b, l.value) {
				if got := nested(result, l.path); !reflect.DeepEqual(normalize(got), normalize(l.value)) {
					t.Errorf("our %s = %v not written: %v", strings.Join(l.path, "."), l.value, got)
				}
			}
		}
		for _, l := range leaves(before, nil) {
			if nested(after, l.path) == nil && nested(result, l.path) != nil && !strings.HasPrefix(l.path[len(l.path)-1], "theirs") {
				t.Errorf("our removal of %s not written: %v", strings.Join(l.path, "."), nested(result, l.path))
			}
		}
		for typ, c := range conditionsOf(after) {
			if !reflect.DeepEqual(conditionsOf(before)[typ], c) && !reflect.DeepEqual(conditionsOf(result)[typ]["status"], c["status"]) {
				t.Errorf("our condition %s not written", typ)
			}
		}
	})
}

type leaf struct {
	path  []string
	value any
}

// leaves lists the non-map values of m with their paths (lists are leaves).
func leaves(m map[string]any, at []string) []leaf {
	var out []leaf
	for k, v := range m {
		p := append(slices.Clone(at), k)
		if len(p) == 2 && p[0] == "metadata" && p[1] == "finalizers" || len(p) == 2 && p[0] == "status" && p[1] == "conditions" {
			continue // keyed lists, checked by entry
		}
		if sub, ok := v.(map[string]any); ok {
			out = append(out, leaves(sub, p)...)
			continue
		}
		out = append(out, leaf{p, v})
	}
	return out
}

func randomMap(rng *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for i := range rng.IntN(4) {
		k := fmt.Sprintf("k%d", i)
		switch {
		case depth > 0 && rng.IntN(3) == 0:
			m[k] = randomMap(rng, depth-1)
		case rng.IntN(2) == 0:
			m[k] = fmt.Sprintf("v%d", rng.IntN(5))
		default:
			m[k] = int64(rng.IntN(5))
		}
	}
	return m
}

func randomObject(rng *rand.Rand) map[string]any {
	labels := map[string]any{}
	for i := range rng.IntN(3) {
		labels[fmt.Sprintf("l%d", i)] = "x"
	}
	var fins []any
	for i := range rng.IntN(3) {
		fins = append(fins, fmt.Sprintf("ours.example.com/f%d", i))
	}
	var conds []any
	for i := range rng.IntN(3) {
		conds = append(conds, cond(fmt.Sprintf("C%d", i), rng))
	}
	o := map[string]any{
		"metadata": map[string]any{"name": "x", "labels": labels},
		"spec":     randomMap(rng, 2),
		"status":   map[string]any{"phase": "p", "detail": randomMap(rng, 1)},
	}
	if fins != nil {
		o["metadata"].(map[string]any)["finalizers"] = fins
	}
	if conds != nil {
		o["status"].(map[string]any)["conditions"] = conds
	}
	return o
}

func cond(typ string, rng *rand.Rand) map[string]any {
	return map[string]any{"type": typ, "status": []string{"True", "False", "Unknown"}[rng.IntN(3)], "reason": "R",
		"lastTransitionTime": "2024-01-01T00:00:00Z"}
}

// ours changes a: sets, adds and removes leaves, drops whole maps, changes
// labels, finalizers and conditions.
func ours(rng *rand.Rand, a map[string]any) {
	for range 1 + rng.IntN(4) {
		switch rng.IntN(6) {
		case 0, 1: // set or add a leaf somewhere in spec
			m := randomSubmap(rng, a["spec"].(map[string]any))
			k := fmt.Sprintf("k%d", rng.IntN(5))
			if _, isMap := m[k].(map[string]any); !isMap { // a map replaced by a value loses what it held, by design
				m[k] = fmt.Sprintf("ours%d", rng.IntN(5))
			}
		case 2: // remove a key (a leaf or a whole map)
			m := randomSubmap(rng, a["spec"].(map[string]any))
			for k := range m {
				delete(m, k)
				break
			}
		case 3: // drop status.detail or the labels whole
			if rng.IntN(2) == 0 {
				delete(a["status"].(map[string]any), "detail")
			} else {
				delete(a["metadata"].(map[string]any), "labels")
			}
		case 4: // a finalizer
			md := a["metadata"].(map[string]any)
			fins, _ := md["finalizers"].([]any)
			if len(fins) > 0 && rng.IntN(2) == 0 {
				md["finalizers"] = fins[1:]
			} else {
				md["finalizers"] = append(fins, fmt.Sprintf("ours.example.com/n%d", rng.IntN(5)))
			}
		case 5: // a condition
			st := a["status"].(map[string]any)
			conds, _ := st["conditions"].([]any)
			typ := fmt.Sprintf("C%d", rng.IntN(4))
			out := []any{}
			for _, c := range conds {
				if c.(map[string]any)["type"] != typ {
					out = append(out, c)
				}
			}
			if rng.IntN(3) > 0 {
				out = append(out, cond(typ, rng))
			}
			st["conditions"] = out
		}
	}
}

func randomSubmap(rng *rand.Rand, m map[string]any) map[string]any {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok && rng.IntN(2) == 0 {
			return randomSubmap(rng, sub)
		}
		_ = k
	}
	return m
}

// foreign adds another writer's keys (named theirs*), a finalizer and a
// condition to l, and returns the paths and values of the keys.
func foreign(rng *rand.Rand, l map[string]any) []leaf {
	var adds []leaf
	add := func(m map[string]any, at []string) {
		k := fmt.Sprintf("theirs%d", rng.IntN(100))
		m[k] = "t"
		adds = append(adds, leaf{append(slices.Clone(at), k), "t"})
	}
	for range rng.IntN(4) {
		switch rng.IntN(4) {
		case 0:
			path := []string{"spec"}
			m := l["spec"].(map[string]any)
			for descended := true; descended; {
				descended = false
				for k, v := range m {
					if sub, ok := v.(map[string]any); ok && rng.IntN(2) == 0 {
						m, path, descended = sub, append(path, k), true
						break
					}
				}
			}
			add(m, path)
		case 1:
			if d, ok := l["status"].(map[string]any)["detail"].(map[string]any); ok {
				add(d, []string{"status", "detail"})
			}
		case 2:
			add(l["metadata"].(map[string]any)["labels"].(map[string]any), []string{"metadata", "labels"})
		case 3:
			md := l["metadata"].(map[string]any)
			fins, _ := md["finalizers"].([]any)
			md["finalizers"] = append(fins, fmt.Sprintf("theirs.example.com/f%d", rng.IntN(5)))
			st := l["status"].(map[string]any)
			conds, _ := st["conditions"].([]any)
			typ := fmt.Sprintf("Theirs%d", rng.IntN(5))
			if _, dup := conditionsOf(l)[typ]; !dup { // types are unique (a list-map key)
				st["conditions"] = append(conds, cond(typ, rng))
			}
		}
	}
	return adds
}

func finalizersOf(m map[string]any) []string {
	var out []string
	fins, _ := nested(m, []string{"metadata", "finalizers"}).([]any)
	for _, f := range fins {
		out = append(out, f.(string))
	}
	return out
}

func conditionsOf(m map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	conds, _ := nested(m, []string{"status", "conditions"}).([]any)
	for _, c := range conds {
		cm := c.(map[string]any)
		out[cm["type"].(string)] = cm
	}
	return out
}

func applyMerge(t *testing.T, doc, body map[string]any) map[string]any {
	t.Helper()
	d, _ := json.Marshal(doc)
	b, _ := json.Marshal(body)
	out, err := jsonpatch.MergePatch(d, b)
	if err != nil {
		t.Fatalf("the body does not apply: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// replacedByUs reports whether a parent of path was a map in before and
// is a value (not a map, not absent) in after.
func replacedByUs(before, after map[string]any, path []string) bool {
	for i := 1; i < len(path); i++ {
		_, wasMap := nested(before, path[:i]).(map[string]any)
		a := nested(after, path[:i])
		if _, isMap := a.(map[string]any); wasMap && a != nil && !isMap {
			return true
		}
	}
	return false
}

// normalize makes numbers of either decoding comparable.
func normalize(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

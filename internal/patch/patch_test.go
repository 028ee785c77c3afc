package patch

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

func js(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}

// plan's merge patch prunes the empty objects that add nothing, and only
// those.
func TestMergeDiffPrunesEmptyObjectsOnly(t *testing.T) {
	for _, tc := range []struct{ name, before, after, want string }{
		{"empty object under an absent parent", `{"spec":{}}`, `{"spec":{"topology":{}}}`, `{}`},
		{"nested empty objects", `{}`, `{"spec":{"topology":{"x":{}}}}`, `{}`},
		{"empty object where there was null", `{"spec":{"topology":null}}`, `{"spec":{"topology":{}}}`, `{}`},
		{"empty object replacing a scalar stays", `{"spec":{"topology":"a"}}`, `{"spec":{"topology":{}}}`, `{"spec":{"topology":{}}}`},
		{"removal stays", `{"spec":{"topology":{"class":"a"}}}`, `{"spec":{}}`, `{"spec":{"topology":null}}`},
		{"emptied list stays", `{"spec":{"tags":["a"]}}`, `{"spec":{"tags":[]}}`, `{"spec":{"tags":[]}}`},
		{"false stays", `{"spec":{"paused":true}}`, `{"spec":{"paused":false}}`, `{"spec":{"paused":false}}`},
		{"a real change beside an empty object", `{}`, `{"spec":{"topology":{},"size":1}}`, `{"spec":{"size":1}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts, err := plan(js(tc.before), &unstructured.Unstructured{Object: js(tc.after)}, Options{})
			if err != nil || len(parts) > 1 {
				t.Fatalf("plan: %d parts, %v", len(parts), err)
			}
			got := map[string]any{}
			if len(parts) == 1 {
				got = parts[0].diff
			}
			if g, _ := json.Marshal(got); string(g) != mustCompact(tc.want) {
				t.Errorf("diff = %s, want %s", g, tc.want)
			}
		})
	}
}

func mustCompact(s string) string {
	b, _ := json.Marshal(js(s))
	return string(b)
}

func TestRebase(t *testing.T) {
	parse := func(s string) []any {
		var l []any
		_ = json.Unmarshal([]byte(s), &l)
		return l
	}
	for _, tc := range []struct {
		name                         string
		current, before, after, want string
		owned                        []string
	}{
		{"theirs kept byte for byte, ours changed",
			`[{"type":"A","status":"False","severity":"Warning","x":1},{"type":"B","status":"True"},{"type":"T","lastProbeTime":"t"}]`,
			`[{"type":"A","status":"False"},{"type":"B","status":"True"}]`,
			`[{"type":"A","status":"False"},{"type":"B","status":"False"},{"type":"C","status":"True"}]`,
			`[{"type":"A","status":"False","severity":"Warning","x":1},{"type":"B","status":"False"},{"type":"T","lastProbeTime":"t"},{"type":"C","status":"True"}]`, nil},
		{"removal of ours only",
			`[{"type":"A"},{"type":"T"}]`, `[{"type":"A"}]`, `[]`, `[{"type":"T"}]`, nil},
		{"theirs removed stays removed",
			`[{"type":"A"}]`, `[{"type":"A"},{"type":"T"}]`, `[{"type":"A"},{"type":"T"}]`, `[{"type":"A"}]`, nil},
		{"owned imposes our unchanged value",
			`[{"type":"O","status":"False"}]`, `[{"type":"O","status":"True"}]`, `[{"type":"O","status":"True"}]`, `[{"type":"O","status":"True"}]`, []string{"O"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &list{key: fieldKey("type"), owned: tc.owned, before: parse(tc.before), after: parse(tc.after)}
			out, _ := l.rebase(parse(tc.current), 0)
			got, _ := json.Marshal(out)
			want, _ := json.Marshal(parse(tc.want))
			if string(got) != string(want) {
				t.Errorf("rebase = %s, want %s", got, want)
			}
		})
	}
	f := &list{key: stringKey, before: []any{"a", "mine"}, after: []any{"a", "new"}}
	out, _ := f.rebase([]any{"a", "mine", "theirs"}, 0)
	if got, _ := json.Marshal(out); string(got) != `["a","theirs","new"]` {
		t.Errorf("finalizers rebase = %s", got)
	}
}

// A list under a parent the change removes: nothing to set when the list
// goes too; else the parent is sent as an object nulling what latest has.
func TestSetListUnderARemovedParent(t *testing.T) {
	latest := map[string]any{"status": map[string]any{"phase": "x", "deprecated": map[string]any{
		"other":   int64(1),
		"v1beta1": map[string]any{"failureReason": "Boom", "conditions": []any{map[string]any{"type": "A"}}},
	}}}
	path := []string{"status", "deprecated", "v1beta1", "conditions"}
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"list goes too", nil, `{"status":{"deprecated":null}}`},
		{"their entries stay", []any{map[string]any{"type": "Theirs"}},
			`{"status":{"deprecated":{"other":null,"v1beta1":{"conditions":[{"type":"Theirs"}],"failureReason":null}}}}`},
	} {
		body := map[string]any{"status": map[string]any{"deprecated": nil}}
		if err := setList(body, latest, tc.v, path); err != nil {
			t.Fatal(err)
		}
		if got, _ := json.Marshal(body); string(got) != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	body := map[string]any{}
	if err := setList(body, latest, []any{}, path); err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(body); string(got) != `{"status":{"deprecated":{"v1beta1":{"conditions":[]}}}}` {
		t.Errorf("no removal: %s", got)
	}
}

func TestDropApplied(t *testing.T) {
	body := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"a": "1", "gone": nil, "b": "2"}},
		"spec":     map[string]any{"size": int64(3), "color": nil},
		"status":   map[string]any{"observedGeneration": int64(2), "phase": "Ready"},
	}
	latest := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"a": "1", "b": "1"}},
		"spec":     map[string]any{"size": float64(3), "color": "red"},
		"status":   map[string]any{"observedGeneration": int64(2), "phase": "Ready"},
	}
	dropApplied(body, latest)
	want := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"b": "2"}},
		"spec":     map[string]any{"color": nil},
	}
	if !reflect.DeepEqual(body, want) {
		t.Fatalf("dropApplied = %v, want %v", body, want)
	}
}

// The fast path says "unchanged" only for an object equal to its snapshot
// whose observedGeneration (when asked for) is already current; anything
// else goes to the JSON difference.
func TestUnchangedFastPath(t *testing.T) {
	type status struct {
		ObservedGeneration int64  `json:"observedGeneration,omitempty"`
		Phase              string `json:"phase,omitempty"`
	}
	type typed struct {
		unstructured.Unstructured
		Status status `json:"status"` // untagged, the client's decoder would not fill it
	}
	// A status that embeds its fields inline (a status shared by kinds).
	type inlineStatus struct {
		status `json:",inline"`
	}
	type inline struct {
		unstructured.Unstructured
		Status inlineStatus `json:"status"`
	}
	inl := func(og int64) *inline {
		o := &inline{Status: inlineStatus{status{ObservedGeneration: og}}}
		o.SetGeneration(2)
		return o
	}
	u := func(og any, phase string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": "x", "generation": int64(2), "labels": map[string]any{"a": "b"}},
			"spec":     map[string]any{"list": []any{int64(1), "two", true, nil, 1.5}},
			"status":   map[string]any{"phase": phase},
		}}
		if og != nil {
			o.Object["status"].(map[string]any)["observedGeneration"] = og
		}
		return o
	}
	for _, tc := range []struct {
		name string
		a, b client.Object
		og   bool
		want bool
	}{
		{"equal", u(int64(2), "x"), u(int64(2), "x"), false, true},
		{"equal, observedGeneration current", u(int64(2), "x"), u(int64(2), "x"), true, true},
		{"equal, observedGeneration behind", u(int64(1), "x"), u(int64(1), "x"), true, false},
		{"equal, no observedGeneration", u(nil, "x"), u(nil, "x"), true, false},
		{"a field differs", u(int64(2), "x"), u(int64(2), "y"), false, false},
		{"a number of another decoding, the same JSON", u(int64(2), "x"), u(float64(2), "x"), false, true},
		{"a number of another decoding, another value", u(int64(2), "x"), u(float64(2.5), "x"), false, false},
		{"typed, current", &typed{Status: status{ObservedGeneration: 0}}, &typed{}, true, true},
		{"typed, differs", &typed{Status: status{Phase: "a"}}, &typed{}, false, false},
		{"typed, inline in the status, current", inl(2), inl(2), true, true},
		{"typed, inline in the status, behind", inl(1), inl(1), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unchanged(tc.a, tc.b, Options{ObservedGeneration: tc.og}); got != tc.want {
				t.Errorf("unchanged = %v, want %v", got, tc.want)
			}
		})
	}
}

// plan and body only read the snapshot, which the engine keeps as the
// latest state for the writes and re-tries (plan takes the lists out of
// the merge patches, not out of the snapshot): every list and map of it is
// left whole, also ones of further condition lists and ones a change drops
// whole.
func TestPlanLeavesTheSnapshotWhole(t *testing.T) {
	snap := js(`{"apiVersion":"v1","kind":"W","metadata":{"name":"w","generation":3,"resourceVersion":"7","uid":"u",
		"labels":{"a":"1","b":"2"},"finalizers":["x/a"],"ownerReferences":[{"uid":"o1","name":"o"}]},
		"spec":{"size":1,"old":{"k":"v"}},
		"status":{"phase":"P","observedGeneration":2,"conditions":[{"type":"Ready","status":"False"}],
			"v1beta2":{"conditions":[{"type":"A","status":"True"}],"note":"n"}}}`)
	am := js(`{"apiVersion":"v1","kind":"W","metadata":{"name":"w","generation":3,"resourceVersion":"7","uid":"u",
		"labels":{"a":"1"},"finalizers":["x/a","x/b"],"ownerReferences":[{"uid":"o2","name":"p"}]},
		"spec":{"size":2},
		"status":{"phase":"Q","conditions":[{"type":"Ready","status":"True"}],
			"v1beta2":{"conditions":[{"type":"A","status":"False"}]}}}`)
	want := runtime.DeepCopyJSON(snap)
	o := Options{ObservedGeneration: true, OwnedConditions: []string{"Ready"}, ConditionLists: [][]string{{"status", "v1beta2", "conditions"}}}
	parts, err := plan(snap, &unstructured.Unstructured{Object: am}, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 {
		t.Fatalf("%d parts, want status and the rest", len(parts))
	}
	for _, p := range parts {
		if _, _, _, err := p.body(snap, nil, nil, o); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(snap, want) {
		g, _ := json.Marshal(snap)
		w, _ := json.Marshal(want)
		t.Errorf("snapshot after plan and body:\n%s\nwas\n%s", g, w)
	}
}

// plan keys ownerReferences by uid and imposes owned conditions: an
// ownerReference of ours renamed is one entry after the rebase, whatever
// else the live one holds, and an owned condition we did not change takes
// our value over another writer's.
func TestPlanKeysAndOwnedConditions(t *testing.T) {
	snap := js(`{"metadata":{"generation":1,"ownerReferences":[{"uid":"o1","name":"o"}]},
		"status":{"conditions":[{"type":"Ready","status":"False"},{"type":"Synced","status":"True"}]}}`)
	am := js(`{"metadata":{"generation":1,"ownerReferences":[{"uid":"o1","name":"p"}]},
		"status":{"conditions":[{"type":"Ready","status":"False"},{"type":"Synced","status":"False"}]}}`)
	latest := js(`{"metadata":{"generation":1,"ownerReferences":[{"uid":"o1","name":"o","controller":true}]},
		"status":{"conditions":[{"type":"Ready","status":"True"},{"type":"Synced","status":"True"}]}}`)
	o := Options{OwnedConditions: []string{"Ready"}}
	parts, err := plan(snap, &unstructured.Unstructured{Object: am}, o)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, p := range parts {
		body, _, _, err := p.body(latest, nil, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range body {
			got[k] = v
		}
	}
	want := js(`{"metadata":{"ownerReferences":[{"uid":"o1","name":"p"}]},
		"status":{"conditions":[{"type":"Ready","status":"False"},{"type":"Synced","status":"False"}]}}`)
	if g, w := mustJSONOf(got), mustJSONOf(want); g != w {
		t.Errorf("bodies = %s, want %s", g, w)
	}
}

func mustJSONOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A body shares the entries of its lists with the change and the latest
// state: building it (twice, as a retry does, written with the object,
// where our conditions get the generation the write produces) changes
// neither, and gives the same body each time.
func TestBodyLeavesItsInputsWhole(t *testing.T) {
	snap := jsInts(`{"metadata":{"generation":3,"finalizers":["x/a"]},
		"status":{"conditions":[{"type":"Ready","status":"False","observedGeneration":3},{"type":"Theirs","status":"True"}]}}`)
	am := jsInts(`{"metadata":{"generation":3,"finalizers":["x/a","x/b"]},
		"status":{"conditions":[{"type":"Ready","status":"True","observedGeneration":3},{"type":"Theirs","status":"True"}]}}`)
	latest := jsInts(`{"metadata":{"generation":3,"finalizers":["x/a","y/c"]},
		"status":{"conditions":[{"type":"Ready","status":"False","observedGeneration":3},{"type":"Theirs","status":"False"}]}}`)
	o := Options{ObservedGeneration: true}
	parts, err := plan(snap, &unstructured.Unstructured{Object: am}, o)
	if err != nil {
		t.Fatal(err)
	}
	// No status subresource: status goes with the rest, and bumps the
	// generation.
	st := parts[0]
	st.status, st.fallback = false, true
	st.lists = append(st.lists, st.rest.lists...)
	for k, v := range st.rest.diff {
		st.diff[k] = v
	}
	wantLatest := runtime.DeepCopyJSON(latest)
	var afters []any
	for _, l := range st.lists {
		afters = append(afters, runtime.DeepCopyJSONValue(l.after))
	}
	var first string
	for i := range 2 {
		body, _, stale, err := st.body(latest, nil, nil, o)
		if err != nil || stale != "" {
			t.Fatalf("body: %v %q", err, stale)
		}
		if g := mustJSONOf(body); i == 0 {
			first = g
		} else if g != first {
			t.Errorf("second body %s, first %s", g, first)
		}
	}
	if !strings.Contains(first, `"observedGeneration":4`) || !strings.Contains(first, `"y/c"`) {
		t.Errorf("body %s: want our condition stamped with generation 4, and their finalizer kept", first)
	}
	if !reflect.DeepEqual(latest, wantLatest) {
		t.Errorf("latest after body: %s, was %s", mustJSONOf(latest), mustJSONOf(wantLatest))
	}
	for i, l := range st.lists {
		if !reflect.DeepEqual(any(l.after), afters[i]) {
			t.Errorf("list %v after body: %s, was %s", l.path, mustJSONOf(l.after), mustJSONOf(afters[i]))
		}
	}
}

// jsInts is js with the integers as int64, as the API server's answers
// have them.
func jsInts(s string) map[string]any {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		panic(err)
	}
	out, err := object.ToJSONTypes(m)
	if err != nil {
		panic(err)
	}
	return out
}

// Maps dropped whole side by side, deep in the object, are each removed at
// their own path: whole where the latest map holds only what we read, key
// by key where another writer added a key.
func TestSiblingMapsDroppedDeep(t *testing.T) {
	snap := jsInts(`{"metadata":{"generation":1},"spec":{"a":{"x":{"y":{"k":1},"y2":{"k":2},"y3":{"k":3},"z":1}}}}`)
	am := jsInts(`{"metadata":{"generation":1},"spec":{"a":{"x":{"z":1}}}}`)
	latest := jsInts(`{"metadata":{"generation":1},"spec":{"a":{"x":{"y":{"k":1},"y2":{"k":2,"theirs":true},"y3":{"k":3},"z":1}}}}`)
	for range 20 { // in every order of the keys
		parts, err := plan(snap, &unstructured.Unstructured{Object: am}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(parts) != 1 {
			t.Fatalf("%d parts, want 1", len(parts))
		}
		body, lock, _, err := parts[0].body(latest, nil, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if g, w := mustJSONOf(body), `{"spec":{"a":{"x":{"y":null,"y2":{"k":null},"y3":null}}}}`; g != w || !lock {
			t.Fatalf("body %s (locked %v), want %s, locked", g, lock, w)
		}
	}
}

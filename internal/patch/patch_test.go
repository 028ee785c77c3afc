package patch

import (
	"encoding/json"
	"testing"
)

func js(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}

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
			got, err := mergeDiff(js(tc.before), js(tc.after))
			if err != nil {
				t.Fatal(err)
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
			owned := map[string]bool{}
			for _, o := range tc.owned {
				owned[o] = true
			}
			l := &list{key: fieldKey("type"), owned: owned, before: parse(tc.before), after: parse(tc.after)}
			got, _ := json.Marshal(l.rebase(parse(tc.current)))
			want, _ := json.Marshal(parse(tc.want))
			if string(got) != string(want) {
				t.Errorf("rebase = %s, want %s", got, want)
			}
		})
	}
	f := &list{key: stringKey, before: []any{"a", "mine"}, after: []any{"a", "new"}}
	if got, _ := json.Marshal(f.rebase([]any{"a", "mine", "theirs"})); string(got) != `["a","theirs","new"]` {
		t.Errorf("finalizers rebase = %s", got)
	}
}

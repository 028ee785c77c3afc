package ownership

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
)

// TestOthersRemoved: what another manager owns and a write removes is
// named down to the owned field (a label, a keyed element, a set value);
// what it owns and the write keeps, changes or never had is not.
func TestOthersRemoved(t *testing.T) {
	const sidecar = `{"f:spec":{"f:containers":{"k:{\"name\":\"side\"}":{".":{},"f:image":{}}}}}`
	for _, tc := range []struct {
		name, set, live, want, named string
	}{
		{"a label removed", `{"f:metadata":{"f:labels":{"f:team":{}}}}`,
			`{"metadata":{"labels":{"team":"a","app":"x"}}}`, `{"metadata":{"labels":{"app":"x"}}}`, "metadata.labels.team (other)"},
		{"the labels removed whole", `{"metadata":{}, "f:metadata":{"f:labels":{"f:example.com/team":{}}}}`,
			`{"metadata":{"labels":{"example.com/team":"a"}}}`, `{"metadata":{}}`, "metadata.labels[example.com/team] (other)"},
		{"a value set again", `{"f:spec":{"f:replicas":{}}}`, `{"spec":{"replicas":5}}`, `{"spec":{"replicas":2}}`, ""},
		{"a field kept", `{"f:spec":{"f:paused":{}}}`, `{"spec":{"paused":true}}`, `{"spec":{"paused":true}}`, ""},
		{"a keyed element removed", sidecar, `{"spec":{"containers":[{"name":"app"},{"name":"side","image":"s"}]}}`,
			`{"spec":{"containers":[{"name":"app"}]}}`, `spec.containers[{"name":"side"}] (other)`},
		{"a keyed element kept", sidecar, `{"spec":{"containers":[{"name":"app"},{"name":"side","image":"s"}]}}`,
			`{"spec":{"containers":[{"name":"side","image":"t"},{"name":"app"}]}}`, ""},
		{"a set value removed", `{"f:metadata":{"f:finalizers":{"v:\"x/y\"":{}}}}`,
			`{"metadata":{"finalizers":["x/y","a/b"]}}`, `{"metadata":{"finalizers":["a/b"]}}`, `metadata.finalizers["x/y"] (other)`},
		{"a field the other owns but live lacks", `{"f:spec":{"f:paused":{}}}`, `{"spec":{}}`, `{"spec":{}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var set, live, want map[string]any
			for _, p := range []struct {
				s  string
				to *map[string]any
			}{{tc.set, &set}, {tc.live, &live}, {tc.want, &want}} {
				if err := json.Unmarshal([]byte(p.s), p.to); err != nil {
					t.Fatal(err)
				}
			}
			got := strings.Join(othersRemoved([]managerSet{{Manager: "other", Set: set}}, live, want), "; ")
			if got != tc.named {
				t.Errorf("named %q, want %q", got, tc.named)
			}
		})
	}
}

// TestLostIn: a field another manager's set held before an update and no
// set holds after it, neither that manager's nor ours, is named; one ours
// holds after it (a value set again) or the manager still holds is not;
// nor is the status.
func TestLostIn(t *testing.T) {
	decode := func(s string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	ours := decode(`{"f:spec":{".":{},"f:size":{},"f:replicas":{}}}`)
	for _, tc := range []struct {
		name, before, after, named string
	}{
		{"a field gone", `{"f:spec":{"f:color":{}}}`, ``, "spec.color (other)"},
		{"a field set again by ours", `{"f:spec":{"f:replicas":{}}}`, ``, ""},
		{"a field kept", `{"f:spec":{"f:color":{}}}`, `{"f:spec":{"f:color":{}}}`, ""},
		{"one of two gone", `{"f:spec":{"f:color":{},"f:shape":{}}}`, `{"f:spec":{"f:shape":{}}}`, "spec.color (other)"},
		{"a keyed element gone", `{"f:spec":{"f:ports":{"k:{\"port\":80}":{".":{},"f:port":{}}}}}`, ``, `spec.ports (other)`},
		{"the status", `{"f:status":{"f:phase":{}}}`, ``, ""},
		{"a field the type shows", `{"f:metadata":{"f:annotations":{"f:note":{}}}}`, ``, ""},
		{"a field the type lacks under one it shows", `{"f:metadata":{"f:annotations":{"f:note":{}}},"f:spec":{"f:color":{}}}`, ``, "spec.color (other)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var afters []map[string]any
			if tc.after != "" {
				afters = append(afters, decode(tc.after))
			}
			found := map[string]sets.Set[string]{}
			lostIn(decode(tc.before), afters, []map[string]any{ours}, decode(`{"metadata":{"annotations":{"note":"theirs"}},"spec":{"size":1}}`), "", "other", found)
			var got []string
			for p, m := range found {
				got = append(got, p+" ("+strings.Join(sets.List(m), ", ")+")")
			}
			if strings.Join(got, "; ") != tc.named {
				t.Errorf("named %q, want %q", got, tc.named)
			}
		})
	}
}

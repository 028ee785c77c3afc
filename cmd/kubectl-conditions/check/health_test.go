package check

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// obj reads an object from YAML, as the dynamic client would return it.
func obj(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return u
}

// row is the part of a finding the cases check.
type row struct {
	Condition, Status, Reason string
	Rule                      Rule
}

func rows(h Health) []row {
	var out []row
	for _, f := range h.Findings {
		out = append(out, row{f.Condition, f.Status, f.Reason, f.Rule})
	}
	return out
}

func TestEvaluate(t *testing.T) {
	const widget = `apiVersion: test.steady.dev/v1
kind: Widget
metadata: {name: w, namespace: ns, generation: 2, creationTimestamp: "2026-01-01T00:00:00Z"}
`
	cases := []struct {
		name    string
		yaml    string
		healthy bool
		want    []row
	}{{
		name:    "Ready True for the current generation",
		yaml:    widget + `status: {observedGeneration: 2, conditions: [{type: Ready, status: "True", reason: Succeeded, observedGeneration: 2, lastTransitionTime: "2026-01-01T00:00:00Z"}]}`,
		healthy: true,
		want:    []row{{"Ready", "True", "Succeeded", ""}},
	}, {
		name: "Ready False",
		yaml: widget + `status: {conditions: [{type: Ready, status: "False", reason: Waiting, message: "waiting for the bucket"}]}`,
		want: []row{{"Ready", "False", "Waiting", RuleNotTrue}},
	}, {
		name: "Available Unknown",
		yaml: widget + `status: {conditions: [{type: Available, status: Unknown, reason: Probing}]}`,
		want: []row{{"Available", "Unknown", "Probing", RuleNotTrue}},
	}, {
		name: "Stalled True beside Ready True",
		yaml: widget + `status: {conditions: [{type: Ready, status: "True", reason: Done}, {type: Stalled, status: "True", reason: BadSpec}]}`,
		want: []row{{"Stalled", "True", "BadSpec", RuleProblemTrue}},
	}, {
		name: "Degraded True, one row per failing condition",
		yaml: widget + `status: {conditions: [{type: Ready, status: "False", reason: A}, {type: Degraded, status: "True", reason: B}]}`,
		want: []row{{"Ready", "False", "A", RuleNotTrue}, {"Degraded", "True", "B", RuleProblemTrue}},
	}, {
		name:    "Stalled and Degraded False are healthy",
		yaml:    widget + `status: {conditions: [{type: Stalled, status: "False"}, {type: Degraded, status: "False"}]}`,
		healthy: true,
		want:    []row{{KstatusCondition, "Current", "", ""}},
	}, {
		name: "a condition observed for an older generation",
		yaml: widget + `status: {conditions: [{type: Ready, status: "True", reason: Done, observedGeneration: 1}]}`,
		want: []row{{"Ready", "True", "Done", RuleConditionStale}},
	}, {
		name: "status.observedGeneration lags",
		yaml: widget + `status: {observedGeneration: 1, conditions: [{type: Ready, status: "True", reason: Done}]}`,
		want: []row{{ObservedGenerationCondition, "1", "LatestGenerationNotObserved", RuleStatusStale}},
	}, {
		name:    "no status at all: kstatus Current",
		yaml:    widget,
		healthy: true,
		want:    []row{{KstatusCondition, "Current", "", ""}},
	}, {
		name: "kstatus: being deleted",
		yaml: `apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: ns, deletionTimestamp: "2026-01-01T00:00:00Z", finalizers: [x]}
`,
		want: []row{{KstatusCondition, "Terminating", "Terminating", RuleNotCurrent}},
	}, {
		name: "kstatus: Terminating is listed beside a condition",
		yaml: `apiVersion: test.steady.dev/v1
kind: Widget
metadata: {name: w, deletionTimestamp: "2026-01-01T00:00:00Z"}
status: {conditions: [{type: Ready, status: "False", reason: Deleting}]}
`,
		want: []row{{"Ready", "False", "Deleting", RuleNotTrue}, {KstatusCondition, "Terminating", "Terminating", RuleNotCurrent}},
	}, {
		name: "kstatus: a Deployment no controller has seen",
		yaml: `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns, generation: 1}
spec: {replicas: 2}
`,
		want: []row{{KstatusCondition, "InProgress", "LessReplicas", RuleNotCurrent}},
	}, {
		name:    "a Pod that Succeeded is not unready",
		yaml:    `{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Succeeded, conditions: [{type: Ready, status: "False", reason: PodCompleted}]}}`,
		healthy: true,
		want:    []row{{"Ready", "False", "PodCompleted", ""}},
	}, {
		name: "a Pod that failed is",
		yaml: `{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Failed, conditions: [{type: Ready, status: "False", reason: PodFailed}]}}`,
		want: []row{{"Ready", "False", "PodFailed", RuleNotTrue}},
	}, {
		name:    "conditions of the core shape and entries without a type",
		yaml:    widget + `status: {conditions: [{status: "False"}, "junk", {type: Ready, status: "True", lastProbeTime: null}]}`,
		healthy: true,
		want:    []row{{"Ready", "True", "", ""}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := Evaluate(obj(t, c.yaml))
			if h.Healthy != c.healthy {
				t.Errorf("Healthy = %v, want %v (%+v)", h.Healthy, c.healthy, h.Findings)
			}
			got := rows(h)
			if len(got) != len(c.want) {
				t.Fatalf("findings %+v, want %+v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("finding %d = %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
}

func TestEvaluateSinceAndMessages(t *testing.T) {
	h := Evaluate(obj(t, `apiVersion: test.steady.dev/v1
kind: Widget
metadata: {name: w, generation: 3, creationTimestamp: "2026-01-01T00:00:00Z"}
status:
  observedGeneration: 2
  conditions:
  - {type: Ready, status: "False", reason: Waiting, message: "waiting", lastTransitionTime: "2026-01-02T00:00:00Z"}
  - {type: Synced, status: "True", reason: Done, message: "done", observedGeneration: 1}
`))
	if len(h.Findings) != 3 {
		t.Fatalf("findings %+v, want Ready, Synced and status.observedGeneration", h.Findings)
	}
	day := func(d int) time.Time { return time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC) }
	if f := h.Findings[0]; f.Since == nil || !f.Since.Equal(day(2)) || f.Message != "waiting" {
		t.Errorf("Ready: %+v, want since the lastTransitionTime and the message", f)
	}
	if f := h.Findings[1]; f.Since != nil || f.Message != "observedGeneration 1 lags generation 3: done" {
		t.Errorf("Synced: %+v", f)
	}
	if f := h.Findings[2]; f.Since == nil || !f.Since.Equal(day(1)) || f.Message != "generation is 3, but the latest observed generation is 2" {
		t.Errorf("status.observedGeneration: %+v, want since the creation", f)
	}
}

// FuzzEvaluate: whatever the object's shape, Evaluate does not panic, a
// healthy object has exactly one row without a rule, and an unhealthy one
// only rows with a rule.
func FuzzEvaluate(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"status":{"phase":"Succeeded","conditions":[{"type":"Ready","status":"False"}]}}`,
		`{"apiVersion":"x/v1","kind":"W","metadata":{"name":"w","generation":2},"status":{"observedGeneration":1,"conditions":[{"type":"Ready","status":"True","observedGeneration":1}]}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","deletionTimestamp":"2026-01-01T00:00:00Z"},"spec":{"replicas":3}}`,
		`{"apiVersion":"x/v1","kind":"W","metadata":{"name":"w"},"status":{"conditions":"not a list"}}`,
		`{"apiVersion":"x/v1","kind":"W","metadata":{"name":"w"},"status":{"conditions":[{"type":1,"status":true,"observedGeneration":"x"}]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return
		}
		h := Evaluate(u)
		if h.Healthy && (len(h.Findings) != 1 || h.Findings[0].Rule != "") {
			t.Fatalf("healthy with findings %+v", h.Findings)
		}
		if !h.Healthy {
			if len(h.Findings) == 0 {
				t.Fatal("unhealthy without a finding")
			}
			for _, f := range h.Findings {
				if f.Rule == "" {
					t.Fatalf("unhealthy with a row without a rule: %+v", h.Findings)
				}
			}
		}
	})
}

package patch

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/steadyk8s/steady/internal/object"
)

// unsignedStatus has unsigned integers, which the converter of
// k8s.io/apimachinery v0.36 gives as uint64 in a struct field.
type unsignedStatus struct {
	Count  uint32            `json:"count,omitempty"`
	Ports  map[string]uint16 `json:"ports,omitempty"`
	Shards struct {
		Total uint64 `json:"total,omitempty"`
	} `json:"shards"`
	Limits *unsignedLimits `json:"limits,omitempty"`
}

type unsignedLimits struct {
	Max uint8 `json:"max"`
}

// TestPatchUnsignedFields: a Go type with unsigned integer fields (a
// CRD's uint32, say) is patched as any other, through a conflict (a body
// computed again) and a removal of a map holding one: no panic
// (runtime.DeepCopyJSON panics on a uint64), the bodies expected.
func TestPatchUnsignedFields(t *testing.T) {
	for _, conflicts := range []int{0, 1} {
		for _, change := range []string{"first status", "limits removed"} {
			name := fmt.Sprintf("%s conflicts=%d", change, conflicts)
			before := &shapeObj[unsignedStatus]{TypeMeta: metav1.TypeMeta{APIVersion: "test.steady.dev/v1", Kind: "Shape"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", ResourceVersion: "7", UID: "u1"}}
			if change == "limits removed" {
				before.Status.Count = 1
				before.Status.Limits = &unsignedLimits{Max: 3}
			}
			after := before.DeepCopyObject().(*shapeObj[unsignedStatus])
			switch change {
			case "first status":
				after.Status.Count = 3
				after.Status.Ports = map[string]uint16{"http": 80}
				after.Status.Shards.Total = 2
			case "limits removed":
				after.Status.Limits = nil
			}
			s := &mapServer{stored: storedOf(t, before), rv: 7, conflicts: conflicts}
			s.other = func(m map[string]any) { m["metadata"].(map[string]any)["labels"] = map[string]any{"other": "writer"} }
			w := Writer{Client: s.client(), Sleep: func(context.Context, time.Duration) error { return nil }}
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s: panic: %v", name, r)
					}
				}()
				res, err := w.Patch(context.Background(), before, after, Options{})
				if err != nil || len(res.Wrote) != 1 {
					t.Errorf("%s: wrote %v, %v", name, res.Wrote, err)
				}
			}()
			if t.Failed() {
				continue
			}
			want := map[string]string{
				"first status":   `{"metadata":{"resourceVersion":"%d","uid":"u1"},"status":{"count":3,"ports":{"http":80},"shards":{"total":2}}}`,
				"limits removed": `{"metadata":{"resourceVersion":"%d","uid":"u1"},"status":{"limits":null}}`,
			}[change]
			last := s.bodies[len(s.bodies)-1]
			if !jsonEqualString(last, fmt.Sprintf(want, 7+conflicts)) {
				t.Errorf("%s: sent %s", name, last)
			}
		}
	}
}

func jsonEqualString(a, b string) bool {
	return object.EqualJSON(js(a), js(b))
}

// TestUnsignedFieldAlreadyLiveIsNoChange: after a conflict, an unsigned
// field of ours that the re-read object already holds (the converter
// gives it as a uint64, the body holds the int64 of the JSON) is no
// change: a body left empty is no write, as for any other field.
func TestUnsignedFieldAlreadyLiveIsNoChange(t *testing.T) {
	for _, tc := range []struct {
		name  string
		other func(status map[string]any)
		want  []string // the bodies sent after the conflict
	}{
		{"count already live", func(s map[string]any) { s["count"] = int64(3) },
			[]string{`{"metadata":{"resourceVersion":"8","uid":"u1"},"status":{"ports":{"http":80}}}`}},
		{"count and port already live", func(s map[string]any) {
			s["count"], s["ports"] = int64(3), map[string]any{"http": int64(80)}
		}, nil},
		{"port already live, count not", func(s map[string]any) { s["ports"] = map[string]any{"http": int64(80)} },
			[]string{`{"metadata":{"resourceVersion":"8","uid":"u1"},"status":{"count":3}}`}},
		{"count live with another value", func(s map[string]any) { s["count"] = int64(2) },
			[]string{`{"metadata":{"resourceVersion":"8","uid":"u1"},"status":{"count":3,"ports":{"http":80}}}`}},
	} {
		before := &shapeObj[unsignedStatus]{TypeMeta: metav1.TypeMeta{APIVersion: "test.steady.dev/v1", Kind: "Shape"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", ResourceVersion: "7", UID: "u1"}}
		before.Status.Count = 1
		after := before.DeepCopyObject().(*shapeObj[unsignedStatus])
		after.Status.Count = 3
		after.Status.Ports = map[string]uint16{"http": 80}
		s := &mapServer{stored: storedOf(t, before), rv: 7, conflicts: 1}
		s.other = func(m map[string]any) { tc.other(m["status"].(map[string]any)) }
		w := Writer{Client: s.client(), Sleep: func(context.Context, time.Duration) error { return nil }}
		res, err := w.Patch(context.Background(), before, after, Options{})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := s.bodies[1:]; len(got) != len(tc.want) || len(got) == 1 && !jsonEqualString(got[0], tc.want[0]) {
			t.Errorf("%s: sent %q after the conflict, want %q", tc.name, got, tc.want)
		}
		if wrote := len(res.Wrote) > 0; wrote != (tc.want != nil) {
			t.Errorf("%s: wrote %v", tc.name, res.Wrote)
		}
	}
}

// TestGenerationOfEveryNumberType: a condition's observedGeneration as the
// converter gives it, from an int64, a float64 (JSON) or an unsigned Go
// field (uint64), is the same generation; one past int64 is the largest.
func TestGenerationOfEveryNumberType(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want int64
	}{{int64(3), 3}, {float64(3), 3}, {uint64(3), 3}, {uint64(1<<63 + 5), 1<<63 - 1}, {nil, 0}, {"3", 0}} {
		if got := generation(map[string]any{"observedGeneration": tc.v}); got != tc.want {
			t.Errorf("generation of %T %v = %d, want %d", tc.v, tc.v, got, tc.want)
		}
	}
	if got := generation(map[string]any{}); got != 0 {
		t.Errorf("generation without one = %d, want 0", got)
	}
	// Through the converter: a typed condition with an unsigned
	// observedGeneration.
	type cond struct {
		Type               string `json:"type"`
		ObservedGeneration uint32 `json:"observedGeneration,omitempty"`
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&struct {
		Conditions []cond `json:"conditions"`
	}{Conditions: []cond{{Type: "Ready", ObservedGeneration: 7}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := generation(m["conditions"].([]any)[0].(map[string]any)); got != 7 {
		t.Errorf("generation of a converted uint32 = %d, want 7", got)
	}
}

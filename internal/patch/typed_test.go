package patch

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// typedSub, typedSpec and typedStatus: a Go type with unsigned integers
// (which the converter gives as uint64), ints, floats, pointers to structs,
// maps, lists and conditions.
type typedSub struct {
	A uint8  `json:"a,omitempty"`
	B string `json:"b,omitempty"`
	N int32  `json:"n,omitempty"`
}

type typedSpec struct {
	Replicas uint32            `json:"replicas,omitempty"`
	Size     int               `json:"size,omitempty"`
	Ratio    float64           `json:"ratio,omitempty"`
	Sub      *typedSub         `json:"sub,omitempty"`
	Tags     map[string]uint16 `json:"tags,omitempty"`
	Items    []uint64          `json:"items,omitempty"`
}

type typedStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Count              uint32             `json:"count,omitempty"`
	Phase              string             `json:"phase,omitempty"`
	Sub                *typedSub          `json:"sub,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// typedObj is a shapeObj with a spec too.
type typedObj struct {
	shapeObj[typedStatus] `json:",inline"`
	Spec                  typedSpec `json:"spec"`
}

// DeepCopyObject copies o through its JSON.
func (o *typedObj) DeepCopyObject() runtime.Object {
	data, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	c := new(typedObj)
	if err := json.Unmarshal(data, c); err != nil {
		panic(err)
	}
	return c
}

// typedChange changes some of o's fields at random.
func typedChange(rng *rand.Rand, o *typedObj) {
	pick := func(n int) bool { return rng.IntN(n) == 0 }
	if pick(2) {
		o.Spec.Replicas = uint32(rng.IntN(3))
	}
	if pick(2) {
		o.Spec.Size = rng.IntN(3)
	}
	if pick(3) {
		o.Spec.Ratio = float64(rng.IntN(3)) / 2
	}
	if pick(3) {
		o.Spec.Sub = nil
	} else if pick(2) {
		o.Spec.Sub = &typedSub{A: uint8(rng.IntN(3)), B: []string{"", "x"}[rng.IntN(2)], N: int32(rng.IntN(2))}
	}
	if pick(3) {
		o.Spec.Tags = map[string]uint16{"a": uint16(rng.IntN(3))}
		if pick(2) {
			o.Spec.Tags["b"] = 7
		}
	} else if pick(3) {
		o.Spec.Tags = nil
	}
	if pick(3) {
		o.Spec.Items = []uint64{uint64(rng.IntN(3))}
	}
	if pick(2) {
		o.Status.Count = uint32(rng.IntN(3))
	}
	if pick(2) {
		o.Status.Phase = []string{"", "Ready", "Busy"}[rng.IntN(3)]
	}
	if pick(3) {
		o.Status.Sub = nil
	} else if pick(2) {
		o.Status.Sub = &typedSub{A: uint8(rng.IntN(3)), B: "s"}
	}
	if pick(2) {
		o.Status.Conditions = nil
		for i := range rng.IntN(3) {
			o.Status.Conditions = append(o.Status.Conditions, metav1.Condition{Type: fmt.Sprintf("C%d", i),
				Status: []metav1.ConditionStatus{"True", "False"}[rng.IntN(2)], Reason: "R", ObservedGeneration: int64(rng.IntN(3)),
				LastTransitionTime: metav1.Unix(100, 0)})
		}
	}
	if pick(3) {
		o.Labels = map[string]string{"l": fmt.Sprint(rng.IntN(2))}
	} else if pick(3) {
		o.Labels = nil
	}
	if pick(3) {
		o.Finalizers = []string{"x.dev/f"}
	} else if pick(3) {
		o.Finalizers = nil
	}
}

// nowRE matches a lastTransitionTime stamped now (a condition flipped
// back): two runs a second apart are alike.
var nowRE = regexp.MustCompile(`20[2-9][0-9]-[0-9T:-]+Z`)

// typedRun patches, for seed, a random change of a typedObj through
// conflicts (another writer's state, often holding some of our change),
// with or without a status subresource and options, either as the Go
// type (typed) or as its JSON in an unstructured object; it returns what
// was sent and the result.
func typedRun(t *testing.T, seed uint64, typed bool) string {
	rng := rand.New(rand.NewPCG(seed, 7))
	before := &typedObj{shapeObj: shapeObj[typedStatus]{TypeMeta: metav1.TypeMeta{APIVersion: "test.steady.dev/v1", Kind: "Typed"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", ResourceVersion: "7", UID: "u1", Generation: int64(1 + rng.IntN(2))}}}
	typedChange(rng, before)
	after := before.DeepCopyObject().(*typedObj)
	typedChange(rng, after)
	other := before.DeepCopyObject().(*typedObj)
	if rng.IntN(2) == 0 {
		other = after.DeepCopyObject().(*typedObj) // another writer (or our write seen late) made our change
	}
	typedChange(rng, other)
	s := &mapServer{stored: storedOf(t, before), rv: 7, conflicts: rng.IntN(3), noStatus: rng.IntN(3) == 0}
	otherMap := storedOf(t, other)
	s.other = func(m map[string]any) {
		clear(m)
		for k, v := range runtime.DeepCopyJSON(otherMap) {
			m[k] = v
		}
	}
	o := Options{ObservedGeneration: rng.IntN(2) == 0}
	if rng.IntN(2) == 0 {
		o.OwnedConditions = []string{"C0"}
	}
	w := Writer{Client: s.client(), Sleep: func(context.Context, time.Duration) error { return nil }}
	var b, a client.Object = before, after
	if !typed {
		b, a = &unstructured.Unstructured{Object: storedOf(t, before)}, &unstructured.Unstructured{Object: storedOf(t, after)}
	}
	res, err := w.Patch(context.Background(), b, a, o)
	var out strings.Builder
	fmt.Fprintf(&out, "wrote %v, gone %v, stale %q, error %v\n", res.Wrote, res.Gone, res.Stale, err)
	for _, body := range s.bodies {
		fmt.Fprintf(&out, "  %s\n", body)
	}
	return nowRE.ReplaceAllString(out.String(), "NOW")
}

// TestTypedPatchesAsUnstructured: a Go type is patched exactly as its JSON
// in an unstructured object (the same bodies, the same writes, the same
// result), through conflicts and re-reads: in particular a field of ours
// that the latest object already holds is no change, also where the
// converter gives it as a uint64 (an unsigned field) and the patch holds
// the JSON's int64.
func TestTypedPatchesAsUnstructured(t *testing.T) {
	for seed := range uint64(1500) {
		if got, want := typedRun(t, seed, true), typedRun(t, seed, false); got != want {
			t.Fatalf("seed %d: as the Go type\n%s\nas unstructured\n%s", seed, got, want)
		}
	}
}

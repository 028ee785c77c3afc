package patch

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
	"github.com/steadyk8s/steady/internal/testapi"
)

func randomWidget(rng *rand.Rand) *testapi.Widget {
	w := &testapi.Widget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "steady.dev/v1", Kind: "Widget"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", UID: "u1", ResourceVersion: "7", Generation: int64(1 + rng.IntN(3))},
	}
	if rng.IntN(2) == 0 {
		w.Labels = map[string]string{"a": "1"}
	}
	if rng.IntN(2) == 0 {
		w.Finalizers = []string{"x.dev/f"}
	}
	w.Spec = testapi.WidgetSpec{Size: rng.IntN(3), Color: []string{"", "red"}[rng.IntN(2)]}
	w.Status.ObservedGeneration = int64(rng.IntN(3))
	w.Status.Phase = []string{"", "Ready"}[rng.IntN(2)]
	if rng.IntN(2) == 0 {
		w.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "R", LastTransitionTime: metav1.Unix(100, 0)}}
	}
	return w
}

// change makes a random change, or none, to each part of w.
func change(rng *rand.Rand, w *testapi.Widget) {
	if rng.IntN(3) == 0 {
		w.Spec.Size++
	}
	if rng.IntN(4) == 0 {
		w.Spec.Color = ""
	}
	if rng.IntN(3) == 0 {
		w.Status.Phase = "Changed"
	}
	if rng.IntN(3) == 0 {
		w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{Type: "Other", Status: metav1.ConditionFalse, Reason: "R", LastTransitionTime: metav1.Unix(200, 0)})
	}
	if rng.IntN(4) == 0 {
		w.Labels = map[string]string{"b": "2"}
	}
	if rng.IntN(4) == 0 {
		w.Finalizers = append(w.Finalizers, "y.dev/g")
	}
}

// TestToMapsPlansAlike: the maps of toMaps, which leave out what is equal
// in both objects, give the writes (each part's body on the snapshot) the
// full conversion gives, for typed and unstructured objects, over random
// changes; and an unchanged spec, and the type meta of a typed object, are
// left out.
func TestToMapsPlansAlike(t *testing.T) {
	left := 0
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 11))
		before := randomWidget(rng)
		after := before.DeepCopy()
		change(rng, after)
		o := Options{ObservedGeneration: rng.IntN(2) == 0}
		if rng.IntN(2) == 0 {
			o.OwnedConditions = []string{"Ready"}
		}
		ub, err := object.ToMap(before)
		if err != nil {
			t.Fatal(err)
		}
		ua, err := object.ToMap(after)
		if err != nil {
			t.Fatal(err)
		}
		for _, pair := range []struct {
			kind          string
			before, after client.Object
		}{
			{"typed", before, after},
			{"unstructured", &unstructured.Unstructured{Object: ub}, &unstructured.Unstructured{Object: ua}},
		} {
			full := func() (map[string]any, map[string]any) {
				bm, err := object.ToMapWithoutManagedFields(pair.before)
				if err != nil {
					t.Fatal(err)
				}
				am, err := object.ToMapWithoutManagedFields(pair.after)
				if err != nil {
					t.Fatal(err)
				}
				return bm, am
			}
			fb, fa := full()
			sb, sa, err := toMaps(pair.before, pair.after, o)
			if err != nil {
				t.Fatal(err)
			}
			if _, has := sb["kind"]; has && pair.kind == "typed" {
				t.Fatalf("seed %d: the type meta, the same in both, was converted: %v", seed, sb)
			}
			if before.Spec == after.Spec {
				if spec, has := sb["spec"]; has {
					t.Fatalf("seed %d %s: an unchanged spec was converted: %v", seed, pair.kind, spec)
				}
				left++
			}
			// What is left of metadata is what differs, and the generation.
			fmd, _ := fb["metadata"].(map[string]any)
			amd, _ := fa["metadata"].(map[string]any)
			smd, _ := sb["metadata"].(map[string]any)
			for k := range smd {
				if k != "generation" && object.SameJSON(fmd[k], amd[k]) {
					t.Fatalf("seed %d %s: metadata.%s is the same in both and was converted", seed, pair.kind, k)
				}
			}
			if reflect.DeepEqual(before.ObjectMeta, after.ObjectMeta) {
				if md, _ := sb["metadata"].(map[string]any); len(md) != 1 || md["generation"] == nil {
					t.Fatalf("seed %d %s: unchanged metadata converted as %v, want its generation alone", seed, pair.kind, md)
				}
			}
			// On the snapshot (the first write), and on the live object
			// as a re-read after a conflict shows it, whole: moved on by
			// another writer (a new generation observed, a label).
			for _, latest := range []map[string]any{nil, fullLive(t, before)} {
				want := bodies(t, fb, fa, latest, pair.after, o)
				got := bodies(t, sb, sa, latest, pair.after, o)
				if !object.EqualJSON(got, want) {
					t.Fatalf("seed %d %s: with toMaps %v, with the full conversion %v", seed, pair.kind, got, want)
				}
			}
		}
	}
	if left == 0 {
		t.Fatal("no case had an unchanged spec")
	}
}

// fullLive is before as another writer left it, converted whole: the
// next generation, observed, and another label.
func fullLive(t *testing.T, before *testapi.Widget) map[string]any {
	t.Helper()
	live := before.DeepCopy()
	live.Generation++
	live.Status.ObservedGeneration = live.Generation
	live.Labels = map[string]string{"other": "writer"}
	m, err := object.ToMapWithoutManagedFields(live)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// bodies plans the change from bm to am and returns each part's step and
// body on latest, or on the snapshot bm when latest is nil.
func bodies(t *testing.T, bm, am, latest map[string]any, obj client.Object, o Options) map[string]any {
	t.Helper()
	snap := runtime.DeepCopyJSON(bm)
	parts, err := plan(snap, runtime.DeepCopyJSON(am), obj, o)
	if err != nil {
		t.Fatal(err)
	}
	if latest == nil {
		latest = snap
	}
	out := map[string]any{}
	for i, p := range parts {
		body, lock, stale, err := p.body(runtime.DeepCopyJSON(latest), o)
		if err != nil {
			t.Fatal(err)
		}
		// A condition flipped back is stamped with the time of the call:
		// two calls may straddle a second.
		out[fmt.Sprintf("%d %s lock=%v stale=%q", i, p.step(), lock, stale)] = withoutNow(body)
	}
	return out
}

// A Go type whose top-level fields are not all structs (a ConfigMap's data)
// is converted as before, with its equal fields zeroed: the writes are
// those of the full conversion, over random changes.
func TestToMapsPlansAlikeForOtherShapes(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 13))
		before := &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "u1", ResourceVersion: "7", Generation: 1, Labels: map[string]string{"a": "1"}},
			Data:       map[string]string{"k": "v"},
		}
		after := before.DeepCopy()
		if rng.IntN(2) == 0 {
			after.Data["k2"] = "v2"
		}
		if rng.IntN(2) == 0 {
			after.Labels = nil
		}
		if rng.IntN(2) == 0 {
			after.Finalizers = []string{"x.dev/f"}
		}
		if _, _, ok := convertTyped(before, after, func(string) bool { return false }); ok {
			t.Fatal("convertTyped took a ConfigMap (data is a map)")
		}
		fb, err := object.ToMapWithoutManagedFields(before)
		if err != nil {
			t.Fatal(err)
		}
		fa, err := object.ToMapWithoutManagedFields(after)
		if err != nil {
			t.Fatal(err)
		}
		sb, sa, err := toMaps(before, after, Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := bodies(t, fb, fa, nil, after, Options{})
		if got := bodies(t, sb, sa, nil, after, Options{}); !object.EqualJSON(got, want) {
			t.Fatalf("seed %d: with toMaps %v, with the full conversion %v", seed, got, want)
		}
	}
}

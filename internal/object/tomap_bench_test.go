package object

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/steadyk8s/steady/internal/testapi"
)

func benchWidget() *testapi.Widget {
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "team-steady-n1000-w1-l0-r0", Name: "team-0001", UID: "5f1c7c6e-8d1b-4f5e-9d0e-2a6b1c3d4e5f", ResourceVersion: "123456", Generation: 1,
		CreationTimestamp: metav1.Unix(1700000000, 0), Finalizers: []string{"bench.steady.dev/finalizer"}, Labels: map[string]string{"app": "x"}}}
	w.Spec.Size = 3
	w.Status.ObservedGeneration = 1
	w.Status.Conditions = []metav1.Condition{
		{Type: "Ready", Status: "True", Reason: "Succeeded", ObservedGeneration: 1, LastTransitionTime: metav1.Unix(1700000000, 0)},
		{Type: "ChildrenReady", Status: "True", Reason: "Reconciled", ObservedGeneration: 1, LastTransitionTime: metav1.Unix(1700000000, 0)},
	}
	return w
}

// BenchmarkToMap compares the two ways to convert a typed object to a map:
// the converter (what ToMap uses) and a JSON round trip.
func BenchmarkToMap(b *testing.B) {
	w := benchWidget()
	b.Run("ToUnstructured", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("JSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			data, err := json.Marshal(w)
			if err != nil {
				b.Fatal(err)
			}
			var m map[string]any
			if err := utiljson.Unmarshal(data, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkToMapWithoutManagedFields(b *testing.B) {
	w := benchWidget()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ToMapWithoutManagedFields(w); err != nil {
			b.Fatal(err)
		}
	}
}

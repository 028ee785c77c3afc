package patch

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/testapi"
)

// shapeObj is an API object with status S.
type shapeObj[S any] struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            S `json:"status,omitempty"`
}

// DeepCopyObject copies o through its JSON (all a test's statuses need).
func (o *shapeObj[S]) DeepCopyObject() runtime.Object {
	data, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	c := new(shapeObj[S])
	if err := json.Unmarshal(data, c); err != nil {
		panic(err)
	}
	return c
}

// storedOf is obj as the map server stores it: decoded JSON.
func storedOf(t *testing.T, obj client.Object) map[string]any {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return u.Object
}

// randomWidget is a Widget with random labels, finalizers, spec and status.
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

// nested is the value at path in m (nil where there is none).
func nested(m map[string]any, path []string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(m, path...)
	return v
}

package reconcile

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/steadyk8s/steady/internal/testapi"
)

// TestSnapshotOwnSharesOnlyManagedFields: For's snapshot is a deep copy of
// its object but for the managedFields, which it shares; the object is left
// as it was; an unstructured object is copied whole.
func TestSnapshotOwnSharesOnlyManagedFields(t *testing.T) {
	w := &testapi.Widget{
		ObjectMeta: metav1.ObjectMeta{Name: "w", Labels: map[string]string{"a": "1"}, Finalizers: []string{"f"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}}},
		Spec:   testapi.WidgetSpec{Size: 1},
		Status: testapi.WidgetStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}},
	}
	want := w.DeepCopy()
	c := snapshotOwn(w).(*testapi.Widget)
	if !reflect.DeepEqual(w, want) {
		t.Fatalf("snapshotOwn changed the object: %+v", w)
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("the snapshot is not the object: %+v", c)
	}
	if &c.ManagedFields[0] != &w.ManagedFields[0] {
		t.Error("the snapshot copied the managedFields")
	}
	c.Labels["a"], c.Finalizers[0], c.Status.Conditions[0].Type = "2", "g", "Other"
	if !reflect.DeepEqual(w, want) {
		t.Fatalf("the snapshot shares more than the managedFields: %+v", w)
	}

	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "u", "managedFields": []any{map[string]any{"manager": "m"}}},
	}}
	cu := snapshotOwn(u).(*unstructured.Unstructured)
	cu.Object["metadata"].(map[string]any)["managedFields"].([]any)[0].(map[string]any)["manager"] = "other"
	if got := u.GetManagedFields(); len(got) != 1 || got[0].Manager != "m" {
		t.Fatalf("an unstructured snapshot shares its managedFields: %v", got)
	}
}

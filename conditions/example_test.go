package conditions_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/steadyk8s/steady/conditions"
)

// Unstructured objects get a Setter over status.conditions, or a typed error
// naming the field when it has the wrong shape.
func ExampleForUnstructured() {
	u := &unstructured.Unstructured{Object: map[string]any{
		"kind":     "Bucket",
		"metadata": map[string]any{"name": "logs", "namespace": "team-a"},
		"status":   map[string]any{"conditions": "not a list"},
	}}
	if _, err := conditions.ForUnstructured(u); err != nil {
		fmt.Println(err)
	}

	delete(u.Object, "status")
	s, _ := conditions.ForUnstructured(u)
	conditions.MarkTrue(s, "Ready", "Created", "")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	fmt.Println(len(conds), conds[0].(map[string]any)["reason"])
	// Output:
	// conditions: Bucket team-a/logs: field status.conditions: is a string, want a list of conditions
	// 1 Created
}

// A core Service carries []metav1.Condition but no GetConditions: On marks
// them without an adapter type.
func ExampleOn() {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 3}}
	conditions.MarkTrue(conditions.On(svc, &svc.Status.Conditions), "IPAllocated", "Allocated", "%s", "10.0.0.7")
	c := svc.Status.Conditions[0]
	fmt.Println(c.Type, c.Status, c.Reason, c.Message, c.ObservedGeneration)
	// Output:
	// IPAllocated True Allocated 10.0.0.7 3
}

// Validate says which field of a condition the API server would refuse;
// reconcile.Patcher refuses such a condition before it writes anything.
func ExampleValidate() {
	fmt.Println(conditions.Validate(metav1.Condition{Type: "Ready", Status: "Maybe", Reason: "Thinking"}))
	fmt.Println(conditions.Validate(metav1.Condition{Type: "example.com/Synced", Status: metav1.ConditionTrue, Reason: "Done"}))
	// Output:
	// conditions: field status: "Maybe" is not True, False or Unknown
	// <nil>
}

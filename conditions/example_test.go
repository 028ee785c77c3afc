package conditions_test

import (
	"fmt"

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

package conditions_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
)

// Mark every condition on every reconcile: a repeated mark changes nothing.
func ExampleMarkTrue() {
	obj := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "db", Generation: 2}}

	fmt.Println(conditions.MarkTrue(obj, "DatabaseReady", "Provisioned", "primary %s is up", "db-0"))
	fmt.Println(conditions.MarkTrue(obj, "DatabaseReady", "Provisioned", "primary %s is up", "db-0"))

	c := conditions.Get(obj, "DatabaseReady")
	fmt.Println(c.Status, c.Reason, c.Message, c.ObservedGeneration)
	// Output:
	// true
	// false
	// True Provisioned primary db-0 is up 2
}

// A summary keeps the reason of the condition that decided it.
func ExampleSetSummary() {
	obj := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "db", Generation: 1}}
	conditions.MarkTrue(obj, "DatabaseReady", "Provisioned", "")
	conditions.MarkFalse(obj, "BackupReady", "BucketMissing", "bucket %q not found", "backups")
	conditions.MarkFalse(obj, "Degraded", "Healthy", "")

	conditions.SetSummary(obj, conditions.Ready,
		conditions.ForConditionTypes{"DatabaseReady", "BackupReady", "Degraded"},
		conditions.NegativePolarityConditionTypes{"Degraded"})

	ready := conditions.Get(obj, conditions.Ready)
	fmt.Println(ready.Status, ready.Reason)
	fmt.Println(ready.Message)
	// Output:
	// False BucketMissing
	// BackupReady: bucket "backups" not found
}

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

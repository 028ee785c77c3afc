package check_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/steadyk8s/steady/cmd/kubectl-conditions/check"
)

// Evaluate says whether one object is healthy and why not.
func ExampleEvaluate() {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "tenancy.example.com/v1",
		"kind":       "Tenant",
		"metadata":   map[string]any{"name": "oil", "generation": int64(3)},
		"status": map[string]any{
			"observedGeneration": int64(3),
			"conditions": []any{
				map[string]any{"type": "Ready", "status": "False", "reason": "QuotaExceeded", "message": "namespace quota is full"},
				map[string]any{"type": "Stalled", "status": "False"},
			},
		},
	}}
	h := check.Evaluate(u)
	fmt.Println("healthy:", h.Healthy)
	for _, f := range h.Findings {
		fmt.Printf("%s=%s %s: %s (%s)\n", f.Condition, f.Status, f.Reason, f.Message, f.Rule)
	}
	// Output:
	// healthy: false
	// Ready=False QuotaExceeded: namespace quota is full (NotTrue)
}

package conditions_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadyk8s/steady/conditions"
)

// Store stands for your own API type with status conditions.
type Store struct {
	metav1.ObjectMeta
	Conditions []metav1.Condition
}

// GetConditions implements conditions.Getter.
func (s *Store) GetConditions() []metav1.Condition { return s.Conditions }

// SetConditions implements conditions.Setter.
func (s *Store) SetConditions(c []metav1.Condition) { s.Conditions = c }

// A summary keeps the reason of the condition that decided it.
func ExampleSetSummary() {
	store := &Store{ObjectMeta: metav1.ObjectMeta{Name: "shop", Generation: 1}}
	conditions.MarkTrue(store, "DatabaseReady", "Provisioned", "")
	conditions.MarkFalse(store, "BackupReady", "BucketMissing", "bucket %q not found", "backups")
	conditions.MarkFalse(store, "Degraded", "Healthy", "")

	conditions.SetSummary(store, conditions.Ready, conditions.SummaryOptions{
		ConditionTypes:   []string{"DatabaseReady", "BackupReady", "Degraded"},
		NegativePolarity: []string{"Degraded"}})

	ready := conditions.Get(store, conditions.Ready)
	fmt.Println(ready.Status, ready.Reason)
	fmt.Println(ready.Message)
	// Output:
	// False BucketMissing
	// BackupReady: bucket "backups" not found
}

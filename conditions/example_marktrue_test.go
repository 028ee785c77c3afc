package conditions_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadyk8s/steady/conditions"
)

// Database stands for your own API type: conditions need only
// GetConditions and SetConditions, and read the generation from the object's
// metadata when it has one.
type Database struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Status DatabaseStatus
}

// DatabaseStatus holds the conditions.
type DatabaseStatus struct {
	Conditions []metav1.Condition
}

// GetConditions implements conditions.Getter.
func (d *Database) GetConditions() []metav1.Condition { return d.Status.Conditions }

// SetConditions implements conditions.Setter.
func (d *Database) SetConditions(c []metav1.Condition) { d.Status.Conditions = c }

// Mark every condition on every reconcile: a repeated mark changes nothing.
func ExampleMarkTrue() {
	db := &Database{ObjectMeta: metav1.ObjectMeta{Name: "db", Generation: 2}}

	fmt.Println(conditions.MarkTrue(db, "DatabaseReady", "Provisioned", "primary %s is up", "db-0"))
	fmt.Println(conditions.MarkTrue(db, "DatabaseReady", "Provisioned", "primary %s is up", "db-0"))

	c := conditions.Get(db, "DatabaseReady")
	fmt.Println(c.Status, c.Reason, c.Message, c.ObservedGeneration)
	// Output:
	// true
	// false
	// True Provisioned primary db-0 is up 2
}

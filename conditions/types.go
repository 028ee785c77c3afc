package conditions

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Getter is an object that exposes its status conditions.
type Getter interface {
	GetConditions() []metav1.Condition
}

// Setter is an object whose status conditions can be replaced. When it is
// also a metav1.Object, marks set ObservedGeneration from its generation.
type Setter interface {
	Getter
	SetConditions([]metav1.Condition)
}

// FieldError says that an object's conditions field has the wrong shape,
// or that a condition holds a value the API server refuses ([Validate]).
type FieldError struct {
	// Object names the object, as kind namespace/name.
	Object string
	// Field is the path of the field: status.conditions, or a field of
	// one condition (status.conditions[2].status; only "status" from
	// [Validate]).
	Field string
	// Err is what is wrong with it.
	Err error
}

// Error implements error.
func (e *FieldError) Error() string {
	if e.Object == "" {
		return fmt.Sprintf("conditions: field %s: %v", e.Field, e.Err)
	}
	return fmt.Sprintf("conditions: %s: field %s: %v", e.Object, e.Field, e.Err)
}

// Unwrap returns the underlying error.
func (e *FieldError) Unwrap() error { return e.Err }

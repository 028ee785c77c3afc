package object

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FinalizerNameError is a finalizer name the API server would refuse in
// metadata.finalizers (it must be a qualified name, "example.com/cleanup").
// It is not exported by any public package: callers fix their code.
type FinalizerNameError struct {
	// Object names the object, as "Kind namespace/name"; empty when none.
	Object string
	// Finalizer is the name refused.
	Finalizer string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *FinalizerNameError) Error() string {
	of := ""
	if e.Object != "" {
		of = " of " + e.Object
	}
	return fmt.Sprintf("finalizer: invalid name %q for field metadata.finalizers%s: %s", e.Finalizer, of, e.Reason)
}

// ValidateFinalizerName returns a [*FinalizerNameError] naming obj (none
// when nil) when the API server would refuse name in metadata.finalizers.
func ValidateFinalizerName(obj client.Object, name string) error {
	errs := validation.IsQualifiedName(name)
	if len(errs) == 0 {
		return nil
	}
	e := &FinalizerNameError{Finalizer: name, Reason: strings.Join(errs, "; ")}
	if obj != nil {
		e.Object = Describe(obj, nil)
	}
	return e
}

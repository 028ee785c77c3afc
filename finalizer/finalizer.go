package finalizer

import (
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

// Has reports whether obj carries the finalizer.
func Has(obj client.Object, name string) bool {
	return slices.Contains(obj.GetFinalizers(), name)
}

// Ensure adds the finalizer to obj in memory and reports whether it did. It
// returns a [*DeletingError] instead when obj is being deleted and lacks it,
// and a [*NameError] for a name the API server would refuse; obj is left as
// it was then.
func Ensure(obj client.Object, name string) (bool, error) {
	if Has(obj, name) {
		return false, nil
	}
	if err := ValidateName(obj, name); err != nil {
		return false, err
	}
	if obj.GetDeletionTimestamp() != nil {
		return false, &DeletingError{Object: object.Describe(obj, nil), Finalizer: name}
	}
	obj.SetFinalizers(append(obj.GetFinalizers(), name))
	return true, nil
}

// Remove removes the finalizer from obj in memory and reports whether it was
// there.
func Remove(obj client.Object, name string) bool {
	f := obj.GetFinalizers()
	kept := slices.DeleteFunc(slices.Clone(f), func(s string) bool { return s == name })
	if len(kept) == len(f) {
		return false
	}
	obj.SetFinalizers(kept)
	return true
}

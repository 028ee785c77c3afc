package ownership

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/object"
)

// Names the tests of package ownership_test use for what is unexported or
// gone.
type (
	MutateFn          = controllerutil.MutateFn
	InvalidOwnerError = invalidOwnerError
)

// OwnerAnnotation is the annotation that records an owner whose kind or
// name is not a label value.
const OwnerAnnotation = ownerAnnotation

// SetControllerReference is setController, the reference and record the
// write calls set, without the stale reference it returns, and whether it
// changed child: the tests of the record judge it in memory.
func SetControllerReference(owner, child client.Object, scheme *runtime.Scheme, opts ...MutateOption) (bool, error) {
	before := child.DeepCopyObject()
	if _, err := setController(owner, child, recordOf(child), scheme, mutateOptions(opts)); err != nil {
		return false, err
	}
	return !equality.Semantic.DeepEqual(before, child), nil
}

// Remembered reports whether c's memory holds a verdict of CreateOrUpdate
// for child (its kind, namespace and name): one this process wrote, which
// the informer has not shown deleted (to steady's handler) yet.
func Remembered(ctx context.Context, c client.Client, child client.Object) bool {
	gvk, err := object.GVK(child, c.Scheme())
	return err == nil && remembered(childKey(ctx, c, gvk, child, updateVerdicts))
}

package ownership

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

// MutateFn sets the desired state on the child it closes over. It runs on
// the live child (or on the new one, when there is none yet).
type MutateFn func() error

// readAndMutate validates the reference, reads child, runs mutate and sets
// the controller reference. It returns a copy of the live object, or nil
// when there is none.
func readAndMutate(ctx context.Context, c client.Client, owner, child client.Object, mutate MutateFn, adopt bool) (client.Object, error) {
	if err := validate(c, owner, child); err != nil {
		return nil, err
	}
	key := client.ObjectKeyFromObject(child)
	var live client.Object
	if err := c.Get(ctx, key, child); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("ownership: reading %s: %w", object.Describe(child, c.Scheme()), err)
		}
	} else {
		live = child.DeepCopyObject().(client.Object)
	}
	if mutate != nil {
		if err := mutate(); err != nil {
			return nil, fmt.Errorf("ownership: mutating %s: %w", object.Describe(child, c.Scheme()), err)
		}
		if err := object.NormalizeJSON(child); err != nil { // a Go int in an unstructured child, say
			return nil, fmt.Errorf("ownership: mutating %s: %w", object.Describe(child, c.Scheme()), err)
		}
	}
	if client.ObjectKeyFromObject(child) != key {
		return nil, fmt.Errorf("ownership: mutate changed the name or namespace of %s %s to %s", object.Kind(child, c.Scheme()), key, client.ObjectKeyFromObject(child))
	}
	if live != nil {
		keepServerMetadata(child, live)
	}
	opts := []SetControllerReferenceOption{}
	if adopt {
		opts = append(opts, Adopt{})
	}
	if _, err := SetControllerReference(owner, child, c.Scheme(), opts...); err != nil {
		return nil, err
	}
	return live, nil
}

// keepServerMetadata puts back on child the metadata the API server owns,
// as read in live, which a mutate that builds the metadata anew drops: an
// update then still carries the resourceVersion that was read (without
// one, an update overwrites whatever changed since the read, or is
// refused, for custom resources).
func keepServerMetadata(child, live client.Object) {
	child.SetResourceVersion(live.GetResourceVersion())
	child.SetUID(live.GetUID())
	child.SetGeneration(live.GetGeneration())
	child.SetCreationTimestamp(live.GetCreationTimestamp())
	child.SetDeletionTimestamp(live.GetDeletionTimestamp())
	child.SetDeletionGracePeriodSeconds(live.GetDeletionGracePeriodSeconds())
	child.SetManagedFields(live.GetManagedFields())
}

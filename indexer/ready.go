package indexer

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

// controllerOwnerIndex is the name of the [ControllerOwner] index.
const controllerOwnerIndex = "steady.metadata.controller"

// ControllerOwner returns the index of objects of type T by their
// controller owner, with values from [OwnerKey]. Each call returns a new
// *Index, but all of them, and [RegisterControllerOwner] for an object of
// type T, are one declaration: what a cache holds under its name,
// "steady.metadata.controller", is this index, whoever registered it, so
// every controller can register it (a no-op after the first). The name is
// reserved: registering an index made with [New] under it is an error, and
// one added with fi.IndexField directly is taken for this one.
func ControllerOwner[T client.Object]() *Index[T] {
	return &Index[T]{name: controllerOwnerIndex, owner: true, extract: func(o T) []string { return controllerOwnerValues(o) }}
}

// RegisterControllerOwner registers the [ControllerOwner] index of obj's
// type on fi, for a caller that holds an object rather than a type
// parameter (a builder's Owns(&corev1.Secret{})). It is the same
// declaration as ControllerOwner[T]().Register for that type: registering
// both, or either twice, on one cache is a no-op. An unstructured obj must
// carry its group, version and kind.
func RegisterControllerOwner(ctx context.Context, fi client.FieldIndexer, obj client.Object) error {
	if obj == nil {
		return fmt.Errorf("indexer: registering %q: no object", controllerOwnerIndex)
	}
	return register(ctx, fi, object.New(obj), controllerOwnerIndex, true, controllerOwnerValues)
}

// controllerOwnerValues is the [ControllerOwner] value of o: the
// [OwnerKey] of its controller, if it has one.
func controllerOwnerValues(o client.Object) []string {
	ref := metav1.GetControllerOfNoCopy(o)
	if ref == nil {
		return nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil
	}
	return []string{OwnerKey(schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, ref.Name)}
}

// OwnerKey is the [ControllerOwner] value for an owner of kind gk named
// name: "Kind.group/name", or "Kind/name" for the core group.
func OwnerKey(gk schema.GroupKind, name string) string {
	return gk.String() + "/" + name
}

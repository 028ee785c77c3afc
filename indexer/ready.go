package indexer

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

// controllerOwnerIndex is the name of the [ControllerOwner] index.
const controllerOwnerIndex = "steady.metadata.controller"

var controllerOwner sync.Map // reflect.Type -> *Index[T]

// controllerOwnerDecl is the declaration [ControllerOwner] and
// [RegisterControllerOwner] record for objects of type typ: one per type,
// whichever of the two registered it.
type controllerOwnerDecl struct{ typ reflect.Type }

// ControllerOwner returns the index of objects of type T by their
// controller owner, with values from [OwnerKey]. It is the same *Index for
// the same T wherever it is called, so every controller can register it;
// [RegisterControllerOwner] registers the same declaration from an object.
func ControllerOwner[T client.Object]() *Index[T] {
	var zero T
	typ := reflect.TypeOf(zero)
	if i, ok := controllerOwner.Load(typ); ok {
		return i.(*Index[T])
	}
	i, _ := controllerOwner.LoadOrStore(typ, &Index[T]{
		name:    controllerOwnerIndex,
		extract: func(o T) []string { return controllerOwnerValues(o) },
		decl:    controllerOwnerDecl{typ: typ},
	})
	return i.(*Index[T])
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
	return register(ctx, fi, object.New(obj), controllerOwnerIndex, controllerOwnerDecl{typ: reflect.TypeOf(obj)},
		func(o client.Object) []string { return controllerOwnerValues(o) })
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

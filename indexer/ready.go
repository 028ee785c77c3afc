package indexer

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

// ControllerOwnerIndex is the name of the [ControllerOwner] index.
const ControllerOwnerIndex = "steady.metadata.controller"

var controllerOwner sync.Map // reflect.Type -> *Index[T]

// ControllerOwner returns the index of objects of type T by their
// controller owner, with values from [OwnerKey]. It is the same *Index for
// the same T wherever it is called, so every controller can register it.
func ControllerOwner[T client.Object]() *Index[T] {
	var zero T
	typ := reflect.TypeOf(zero)
	if i, ok := controllerOwner.Load(typ); ok {
		return i.(*Index[T])
	}
	i, _ := controllerOwner.LoadOrStore(typ, New(ControllerOwnerIndex, func(o T) []string {
		ref := metav1.GetControllerOfNoCopy(o)
		if ref == nil {
			return nil
		}
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			return nil
		}
		return []string{OwnerKey(schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, ref.Name)}
	}))
	return i.(*Index[T])
}

// OwnerKey is the [ControllerOwner] value for an owner of kind gk named
// name: "Kind.group/name", or "Kind/name" for the core group.
func OwnerKey(gk schema.GroupKind, name string) string {
	return gk.String() + "/" + name
}

// StringSlice declares an index named name over the string or string list
// at path in the object (as in its JSON: "status", "namespaces"). It
// converts each object to read the field, so prefer [New] with a typed
// extractor on hot types.
func StringSlice[T client.Object](name string, path ...string) *Index[T] {
	return New(name, func(o T) []string {
		m, err := object.ToMap(o)
		if err != nil {
			return nil
		}
		if s, ok, _ := unstructured.NestedStringSlice(m, path...); ok {
			return s
		}
		if s, ok, _ := unstructured.NestedString(m, path...); ok {
			return []string{s}
		}
		return nil
	})
}

// ListByControllerOwner lists into list the objects controlled by the owner
// of kind gk named name, through the [ControllerOwner] index. It returns a
// [*NotRegisteredError] when the reader has no such index; a reader whose
// API server rejected the index once is not asked again (the error comes
// without a request).
func ListByControllerOwner(ctx context.Context, r client.Reader, list client.ObjectList, gk schema.GroupKind, name string, opts ...client.ListOption) error {
	return listBy(ctx, r, list, ControllerOwnerIndex, fmt.Sprintf("%T", list), OwnerKey(gk, name), opts)
}

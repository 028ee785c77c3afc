// Package object holds the object helpers that steady's packages share: how
// an object is named in errors, empty copies, and conversion to and from
// JSON-shaped maps. One copy of each, so that they cannot drift apart.
package object

import (
	"fmt"
	"maps"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Key names obj as "namespace/name", or "name" when it is cluster-scoped.
func Key(obj client.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

// Kind is obj's kind: from its type meta when set, else from scheme (which
// may be nil), else its Go type name.
func Kind(obj runtime.Object, scheme *runtime.Scheme) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	if scheme != nil {
		if gvk, err := apiutil.GVKForObject(obj, scheme); err == nil && gvk.Kind != "" {
			return gvk.Kind
		}
	}
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// Describe names obj in errors and logs as "Kind namespace/name" (see
// [Kind] for where the kind comes from).
func Describe(obj client.Object, scheme *runtime.Scheme) string {
	return Kind(obj, scheme) + " " + Key(obj)
}

// Described is [Describe] put off until it is formatted (%s, %v): an
// error message's name that costs nothing on the paths without an error.
type Described struct {
	Obj    client.Object
	Scheme *runtime.Scheme
}

// String implements fmt.Stringer: [Describe] of Obj.
func (d Described) String() string { return Describe(d.Obj, d.Scheme) }

// GVK is obj's group, version and kind: from its type meta when the kind is
// set there, else from scheme.
func GVK(obj runtime.Object, scheme *runtime.Scheme) (schema.GroupVersionKind, error) {
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind != "" {
		return gvk, nil
	}
	return apiutil.GVKForObject(obj, scheme)
}

// New returns a new, zero object of obj's Go type carrying obj's group,
// version and kind (which an unstructured object needs to be read into).
func New[T runtime.Object](obj T) T {
	out := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(T)
	out.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	return out
}

// EmptyLike is [New] with obj's namespace and name, for a Get or for the
// API server's answer to be decoded into with no stale field.
func EmptyLike[T client.Object](obj T) T {
	out := New(obj)
	out.SetNamespace(obj.GetNamespace())
	out.SetName(obj.GetName())
	return out
}

// ToMap returns obj as a JSON-shaped map. It is always a copy: changing the
// map never changes obj, also for an unstructured object, whose content may
// hold Go values that encode to JSON (an int, a []string): the copy holds
// their JSON types.
func ToMap(obj runtime.Object) (map[string]any, error) {
	if u, ok := obj.(runtime.Unstructured); ok {
		c := u.UnstructuredContent()
		if !isJSON(c) {
			// Go values the JSON encoder takes (an int, a []string) but
			// runtime.DeepCopyJSON panics on.
			return ToJSONTypes(c)
		}
		return runtime.DeepCopyJSON(c), nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %T to a map: %w", obj, err)
	}
	return m, nil
}

// ToMapWithoutManagedFields is [ToMap] without metadata.managedFields, which
// the API server owns and steady never compares or writes: most often the
// costliest part of an object to convert (each entry's fieldsV1 is parsed).
// obj is not changed: a typed object is converted through a shallow copy.
func ToMapWithoutManagedFields(obj runtime.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		md, _ := u.Object["metadata"].(map[string]any)
		if _, has := md["managedFields"]; !has {
			return ToMap(obj)
		}
		shallow := Shallow(u)
		md = maps.Clone(md)
		delete(md, "managedFields")
		shallow.Object["metadata"] = md
		return ToMap(shallow)
	}
	m, ok := obj.(metav1.Object)
	v := reflect.ValueOf(obj)
	if !ok || len(m.GetManagedFields()) == 0 || v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return ToMap(obj)
	}
	shallow := Shallow(obj) // of obj's Go type: a metav1.Object too
	shallow.(metav1.Object).SetManagedFields(nil)
	return ToMap(shallow)
}

// Shallow returns a copy of obj that shares its maps and slices: what a
// later decode into obj (which allocates new ones) leaves as it was.
func Shallow[T runtime.Object](obj T) T {
	if u, ok := any(obj).(*unstructured.Unstructured); ok {
		return any(&unstructured.Unstructured{Object: maps.Clone(u.Object)}).(T)
	}
	v := reflect.ValueOf(obj)
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	return c.Interface().(T)
}

// CopyMap is a new map with m's entries (the values shared), sized for
// them and extra more. Unlike maps.Clone, which copies m's table whole, it
// does not copy a map made large (the unstructured converter sizes a
// struct's map by its number of fields) as large. Never nil.
func CopyMap[V any](m map[string]V, extra int) map[string]V {
	out := make(map[string]V, len(m)+extra)
	maps.Copy(out, m)
	return out
}

// Move sets dst, an object of the same Go type as src, to src's value
// without a deep copy: they share their maps and slices after, so neither
// may be changed while the other is still read (src is an answer of the
// API server that only dst will hold, say).
func Move(dst, src runtime.Object) {
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src).Elem())
}

// Copy sets dst, an object of the same Go type as src, to a deep copy of
// src.
func Copy(dst, src runtime.Object) {
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src.DeepCopyObject()).Elem())
}

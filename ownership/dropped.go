package ownership

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

// removeOnlyKeysRead rewrites, in place, a merge patch made from live so
// that it removes no key another writer added since the read: each map the
// patch removes whole (a null where live holds a non-empty object), such as
// cm.Data = nil or dropped labels, becomes the removal of the keys read,
// one by one, where that means the same: a map of the child's Go type t
// (labels, annotations, a ConfigMap's data; for a kind without a Go type,
// the metadata's maps only; nil: unknown) whose values are not objects.
// Removing any other object whole (a struct, which the API server may not
// take empty; a map of objects; a field of a kind without a Go type) stays
// a null, and dropsWhole reports it: such a patch must carry the
// resourceVersion read. The maps of nulls it puts in are new: the patch
// shares nothing with live.
func removeOnlyKeysRead(patch, live map[string]any, t reflect.Type) (dropsWhole bool) {
	for k, v := range patch {
		ft := fieldType(t, k)
		switch pv := v.(type) {
		case nil:
			read, ok := live[k].(map[string]any)
			if !ok || len(read) == 0 {
				continue // not an object, or nothing read in it
			}
			if !isMap(ft) || hasObjects(read) {
				dropsWhole = true
				continue
			}
			patch[k] = nulls(read)
		case map[string]any:
			read, _ := live[k].(map[string]any)
			dropsWhole = removeOnlyKeysRead(pv, read, ft) || dropsWhole
		}
	}
	return dropsWhole
}

// nulls is the merge patch that removes the keys of read, one by one.
func nulls(read map[string]any) map[string]any {
	out := make(map[string]any, len(read))
	for key := range read {
		out[key] = nil
	}
	return out
}

// hasObjects reports whether a map holds an object among its values: its
// keys are then not the only thing another writer may have added to.
func hasObjects(m map[string]any) bool {
	for _, v := range m {
		if _, ok := v.(map[string]any); ok {
			return true
		}
	}
	return false
}

// withMetadataOnly is the Go type assumed of a kind without one: its
// metadata's maps (labels, annotations) are known, nothing else.
var withMetadataOnly = reflect.TypeOf(struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
}{})

// goType is the Go type of obj's kind: its own for a typed object, the
// scheme's for an unstructured object of a kind the scheme knows, else a
// type that knows only the metadata.
func goType(c client.Client, obj client.Object) reflect.Type {
	if _, ok := obj.(runtime.Unstructured); !ok {
		return reflect.TypeOf(obj)
	}
	gvk, err := object.GVK(obj, c.Scheme())
	if err == nil && c.Scheme().Recognizes(gvk) {
		if typed, err := c.Scheme().New(gvk); err == nil {
			if _, ok := typed.(runtime.Unstructured); !ok {
				return reflect.TypeOf(typed)
			}
		}
	}
	return withMetadataOnly
}

// isMap reports whether t is a Go map (through pointers).
func isMap(t reflect.Type) bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t != nil && t.Kind() == reflect.Map
}

// fieldType is the type of the JSON field name in a value of type t (a
// struct's field by its JSON name, as [object.JSONField] finds it, embedded
// structs included; a map's values), or nil when t is nil or has no such
// field.
func fieldType(t reflect.Type, name string) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == nil:
		return nil
	case t.Kind() == reflect.Map:
		return t.Elem()
	case t.Kind() == reflect.Struct:
		if path, ok := object.JSONField(t, name); ok {
			return t.FieldByIndex(path).Type
		}
	}
	return nil
}

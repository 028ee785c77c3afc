package object

import (
	"maps"
	"reflect"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conditionsType is the Go type of a kubebuilder status.conditions field.
var conditionsType = reflect.TypeFor[[]metav1.Condition]()

// StatusField finds, in t (a pointer to a struct, the Go type of an API
// object), the field of its status whose JSON name is name: a field of the
// struct (by value or by pointer) that the JSON name "status" decodes
// into. It returns the index paths to reach the status in the object's
// struct and the field in the status's struct (each through the structs
// embedded inline, by value or by pointer, on the way), and false where t
// has no such field. JSON names are matched as the Kubernetes JSON decoder
// (the client's) decodes them: the tag's name, else the Go name, exactly
// (encoding/json would also fold case, that decoder does not); the fields
// of a struct embedded without a JSON name are its embedder's, one with a
// JSON name is a field of that name.
//
// The paths are shared: the caller must not change them. They are found
// once per type and name.
func StatusField(t reflect.Type, name string) (status, field []int, ok bool) {
	if t == nil {
		return nil, nil, false
	}
	if m, hit := statusFields.Load(t); hit {
		if p, hit := m.(map[string]statusPaths)[name]; hit {
			return p.status, p.field, p.ok
		}
	}
	var p statusPaths
	p.status, p.field, p.ok = statusField(t, name)
	m := map[string]statusPaths{}
	if old, hit := statusFields.Load(t); hit {
		maps.Copy(m, old.(map[string]statusPaths))
	}
	m[name] = p
	statusFields.Store(t, m) // a concurrent name lost here is found again
	return p.status, p.field, p.ok
}

// statusPaths is what StatusField returns for a type and name.
type statusPaths struct {
	status, field []int
	ok            bool
}

// statusFields holds, for a Go type, the map (never changed once stored)
// of the names StatusField was asked for to their statusPaths.
var statusFields sync.Map // reflect.Type -> map[string]statusPaths

func statusField(t reflect.Type, name string) (status, field []int, ok bool) {
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, nil, false
	}
	status, ok = JSONField(t.Elem(), "status")
	if !ok {
		return nil, nil, false
	}
	st := t.Elem().FieldByIndex(status).Type
	if st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	if st.Kind() != reflect.Struct {
		return nil, nil, false
	}
	field, ok = JSONField(st, name)
	return status, field, ok
}

// JSONField is the index path of the exported field of struct type t that
// the JSON name decodes into (see [StatusField]), a shallower one before a
// deeper one.
func JSONField(t reflect.Type, name string) ([]int, bool) {
	type embedded struct {
		t    reflect.Type
		path []int
	}
	seen := map[reflect.Type]bool{}
	for level := []embedded{{t: t}}; len(level) > 0; {
		var next []embedded
		for _, e := range level {
			if seen[e.t] {
				continue
			}
			seen[e.t] = true
			for i := range e.t.NumField() {
				f := e.t.Field(i)
				jsonTag := f.Tag.Get("json")
				if jsonTag == "-" {
					continue
				}
				tag, _, _ := strings.Cut(jsonTag, ",")
				path := append(append([]int(nil), e.path...), i)
				if f.Anonymous && tag == "" {
					ft := f.Type
					if ft.Kind() == reflect.Pointer {
						if !f.IsExported() {
							continue // encoding/json cannot allocate it
						}
						ft = ft.Elem()
					}
					if ft.Kind() == reflect.Struct {
						next = append(next, embedded{ft, path})
					}
					continue
				}
				if !f.IsExported() {
					continue
				}
				if tag != "" && tag == name || tag == "" && f.Name == name {
					return path, true
				}
			}
		}
		level = next
	}
	return nil, false
}

// typeAt is the type of the field at path in struct type t, through
// pointers to structs.
func typeAt(t reflect.Type, path []int) reflect.Type {
	for _, i := range path {
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		t = t.Field(i).Type
	}
	return t
}

// valueAt is the field at path in v, a struct, through pointers to
// structs: a nil one is set to a new, empty struct with alloc, and gives
// false otherwise.
func valueAt(v reflect.Value, path []int, alloc bool) (reflect.Value, bool) {
	for _, i := range path {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !alloc || !v.CanSet() {
					return reflect.Value{}, false
				}
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(i)
	}
	return v, true
}

// StatusFieldType is the Go type of t's status field of JSON name name
// (see [StatusField]); false where t has none.
func StatusFieldType(t reflect.Type, name string) (reflect.Type, bool) {
	s, f, ok := StatusField(t, name)
	if !ok {
		return nil, false
	}
	return typeAt(typeAt(t.Elem(), s), f), true
}

// StatusValue returns obj's status field of JSON name name (see
// [StatusField]), settable; ok is false where obj's type has none, or its
// status (or a struct it embeds on the way to the field) is a nil pointer
// and alloc is false. With alloc, a nil pointer on the way is set to a
// new, empty struct first.
func StatusValue(obj any, name string, alloc bool) (reflect.Value, bool) {
	v := reflect.ValueOf(obj)
	if !v.IsValid() {
		return reflect.Value{}, false
	}
	s, f, ok := StatusField(v.Type(), name)
	if !ok || v.IsNil() {
		return reflect.Value{}, false
	}
	st, ok := valueAt(v.Elem(), s, alloc)
	if !ok {
		return reflect.Value{}, false
	}
	return valueAt(st, f, alloc)
}

// HasConditionList reports whether t holds status.conditions as a
// []metav1.Condition field: the kubebuilder shape, with or without
// GetConditions and SetConditions methods.
func HasConditionList(t reflect.Type) bool {
	ft, ok := StatusFieldType(t, "conditions")
	return ok && ft == conditionsType
}

// ConditionList returns a pointer to obj's status.conditions where its Go
// type holds them as a []metav1.Condition field (see [HasConditionList]);
// nil otherwise. A nil status pointer is allocated when alloc is true, and
// gives nil otherwise.
func ConditionList(obj any, alloc bool) *[]metav1.Condition {
	if obj == nil {
		return nil
	}
	v, ok := StatusValue(obj, "conditions", alloc)
	if !ok || v.Type() != conditionsType {
		return nil
	}
	return v.Addr().Interface().(*[]metav1.Condition)
}

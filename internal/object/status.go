package object

import (
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conditionsType is the Go type of a kubebuilder status.conditions field.
var conditionsType = reflect.TypeFor[[]metav1.Condition]()

// StatusField finds, in t (a pointer to a struct, the Go type of an API
// object), the field of its status whose JSON name is name: a field of the
// struct (by value or by pointer) that the JSON name "status" decodes
// into. It returns the two indexes to reach it, and false where t has no
// such field. JSON names are matched as encoding/json decodes them: the
// tag's name, else the Go name without regard to case.
func StatusField(t reflect.Type, name string) (status, field int, ok bool) {
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return 0, 0, false
	}
	status, ok = jsonField(t.Elem(), "status")
	if !ok {
		return 0, 0, false
	}
	st := t.Elem().Field(status).Type
	if st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	if st.Kind() != reflect.Struct {
		return 0, 0, false
	}
	field, ok = jsonField(st, name)
	return status, field, ok
}

// jsonField is the index of the exported field of struct type t that the
// JSON name decodes into; embedded structs are not searched.
func jsonField(t reflect.Type, name string) (int, bool) {
	fold := -1
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Anonymous {
			continue
		}
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-":
			continue
		case tag == name:
			return i, true
		case tag == "" && f.Name == name:
			return i, true
		case tag == "" && fold < 0 && strings.EqualFold(f.Name, name):
			fold = i
		}
	}
	return fold, fold >= 0
}

// StatusFieldType is the Go type of t's status field of JSON name name
// (see [StatusField]); false where t has none.
func StatusFieldType(t reflect.Type, name string) (reflect.Type, bool) {
	s, f, ok := StatusField(t, name)
	if !ok {
		return nil, false
	}
	st := t.Elem().Field(s).Type
	if st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	return st.Field(f).Type, true
}

// StatusValue returns obj's status field of JSON name name (see
// [StatusField]), settable; ok is false where obj's type has none, or its
// status is a nil pointer and alloc is false. With alloc, a nil status
// pointer is set to a new, empty status first.
func StatusValue(obj any, name string, alloc bool) (reflect.Value, bool) {
	v := reflect.ValueOf(obj)
	if !v.IsValid() {
		return reflect.Value{}, false
	}
	s, f, ok := StatusField(v.Type(), name)
	if !ok || v.IsNil() {
		return reflect.Value{}, false
	}
	st := v.Elem().Field(s)
	if st.Kind() == reflect.Pointer {
		if st.IsNil() {
			if !alloc {
				return reflect.Value{}, false
			}
			st.Set(reflect.New(st.Type().Elem()))
		}
		st = st.Elem()
	}
	return st.Field(f), true
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

package object

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

func TestDescribe(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"typed, scheme", Describe(cm, scheme.Scheme), "ConfigMap ns/a"},
		{"typed, no scheme", Describe(cm, nil), "ConfigMap ns/a"},
		{"put off (Described)", fmt.Sprintf("%s", Described{Obj: cm, Scheme: scheme.Scheme}), "ConfigMap ns/a"},
		{"cluster-scoped", Describe(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, nil), "Namespace n"},
		{"unstructured", Describe(func() *unstructured.Unstructured {
			u := &unstructured.Unstructured{}
			u.SetKind("Widget")
			u.SetNamespace("ns")
			u.SetName("w")
			return u
		}(), nil), "Widget ns/w"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestToMapIsACopy(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"phase": "x"}}}
	m, err := ToMap(u)
	if err != nil {
		t.Fatal(err)
	}
	delete(m, "status")
	m2, _ := ToMap(u)
	if _, ok := m2["status"]; !ok {
		t.Fatal("ToMap returned the object's own map: deleting from it changed the object")
	}
}
func TestEmptyLike(t *testing.T) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("ns")
	u.SetName("a")
	u.SetLabels(map[string]string{"x": "y"})
	e := EmptyLike(u)
	if e.GetKind() != "ConfigMap" || e.GetName() != "a" || e.GetNamespace() != "ns" || e.GetLabels() != nil {
		t.Fatalf("EmptyLike = %v", e.Object)
	}
}

func TestToMapOfGoValues(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"replicas": 3, "tags": []string{"a"}, "labels": map[string]string{"x": "y"}},
	}}
	m, err := ToMap(u)
	if err != nil {
		t.Fatal(err)
	}
	spec := m["spec"].(map[string]any)
	if spec["replicas"] != int64(3) || spec["tags"].([]any)[0] != "a" || spec["labels"].(map[string]any)["x"] != "y" {
		t.Fatalf("ToMap = %#v", m)
	}
	if _, ok := u.Object["spec"].(map[string]any)["replicas"].(int); !ok {
		t.Error("ToMap changed the object's own content")
	}
}

func TestToJSONTypes(t *testing.T) {
	m, err := ToJSONTypes(map[string]any{
		"a": 1, "b": int32(2), "c": uint(3), "d": float32(1.5), "e": []string{"x"},
		"f": map[string]string{"k": "v"}, "g": []any{map[string]any{"h": int8(4)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": int64(1), "b": int64(2), "c": int64(3), "d": float64(1.5), "e": []any{"x"},
		"f": map[string]any{"k": "v"}, "g": []any{map[string]any{"h": int64(4)}}}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("ToJSONTypes = %#v", m)
	}
	_, err = ToJSONTypes(map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": struct{}{}}}}})
	var pe *PathError
	if !errors.As(err, &pe) || pe.Path != "spec.ports[0].port" {
		t.Fatalf("ToJSONTypes of a struct: %v, want a PathError at spec.ports[0].port", err)
	}
	if _, err := ToJSONTypes(map[string]any{"n": uint64(math.MaxUint64)}); err == nil {
		t.Error("a uint64 past int64 was accepted")
	}
	// A nil list or map is JSON null (what the encoder writes), not empty:
	// a patch made from the copy removes it.
	m, err = ToJSONTypes(map[string]any{"n": 1, "l": []any(nil), "s": []string(nil), "m": map[string]any(nil), "t": map[string]string(nil),
		"e": []string{}})
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]any{"n": int64(1), "l": nil, "s": nil, "m": nil, "t": nil, "e": []any{}}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("ToJSONTypes of nil lists and maps = %#v, want %#v", m, want)
	}
}

func TestEqual(t *testing.T) {
	cm := func(data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Data: data}
	}
	u := func(spec any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"kind": "Thing", "spec": spec}}
	}
	for _, tc := range []struct {
		name string
		a, b runtime.Object
		want bool
	}{
		{"same typed values", cm(map[string]string{"k": "v"}), cm(map[string]string{"k": "v"}), true},
		{"a value changed", cm(map[string]string{"k": "v"}), cm(map[string]string{"k": "w"}), false},
		{"a key removed", cm(map[string]string{"k": "v"}), cm(map[string]string{}), false},
		{"nil and empty: equal JSON, unequal values", cm(nil), cm(map[string]string{}), false},
		{"another Go type", cm(nil), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}, false},
		{"same unstructured", u(map[string]any{"n": int64(1), "l": []any{"x"}}), u(map[string]any{"n": int64(1), "l": []any{"x"}}), true},
		{"unstructured number changed", u(map[string]any{"n": int64(1)}), u(map[string]any{"n": int64(2)}), false},
		{"unstructured bool set to false", u(map[string]any{"b": true}), u(map[string]any{"b": false}), false},
		{"unstructured list emptied", u(map[string]any{"l": []any{"x"}}), u(map[string]any{"l": []any{}}), false},
		{"unstructured key removed", u(map[string]any{"a": "x", "b": "y"}), u(map[string]any{"a": "x"}), false},
		{"two nil unstructured", (*unstructured.Unstructured)(nil), (*unstructured.Unstructured)(nil), true},
		{"nil and an unstructured", (*unstructured.Unstructured)(nil), u(nil), false},
		{"an unstructured and nil", u(nil), (*unstructured.Unstructured)(nil), false},
		{"two nil typed", (*corev1.ConfigMap)(nil), (*corev1.ConfigMap)(nil), true},
		{"nil and a typed", (*corev1.ConfigMap)(nil), cm(nil), false},
	} {
		if got := Equal(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: Equal = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestToMapWithoutManagedFields(t *testing.T) {
	mf := []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:k":{}}}`)}}}
	typed := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ManagedFields: mf, Labels: map[string]string{"l": "v"}},
		Data: map[string]string{"k": "v"}}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "a", "managedFields": []any{map[string]any{"manager": "m"}}}, "data": map[string]any{"k": "v"}}}
	for _, obj := range []runtime.Object{typed, u} {
		before := obj.DeepCopyObject()
		m, err := ToMapWithoutManagedFields(obj)
		if err != nil {
			t.Fatal(err)
		}
		full, err := ToMap(obj)
		if err != nil {
			t.Fatal(err)
		}
		delete(full["metadata"].(map[string]any), "managedFields")
		if !reflect.DeepEqual(m, full) {
			t.Errorf("%T: %v, want ToMap without managedFields %v", obj, m, full)
		}
		if !reflect.DeepEqual(obj, before) {
			t.Errorf("%T: the object changed: %v", obj, obj)
		}
		m["metadata"].(map[string]any)["name"] = "changed"
		if obj.(metav1.Object).GetName() != "a" {
			t.Errorf("%T: the map shares the object's metadata", obj)
		}
	}
}

// CopyMap copies the entries, not the values: changing the copy's keys
// leaves m as it was.
func TestCopyMap(t *testing.T) {
	inner := map[string]any{"k": "v"}
	m := map[string]any{"a": int64(1), "inner": inner}
	c := CopyMap(m, 1)
	c["b"] = "new"
	delete(c, "a")
	if len(m) != 2 || m["a"] != int64(1) || m["b"] != nil {
		t.Errorf("m = %v after changing its copy", m)
	}
	if c["inner"].(map[string]any)["k"] != "v" || len(c) != 2 {
		t.Errorf("copy = %v", c)
	}
	if CopyMap[string](nil, 2) == nil {
		t.Error("a copy of nil is nil")
	}
}

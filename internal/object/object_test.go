package object

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
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

func TestFromMapLeavesNothingBehind(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"x": "y"}}, Data: map[string]string{"k": "v"}}
	cm.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	if err := FromMap(map[string]any{"metadata": map[string]any{"name": "b"}}, cm); err != nil {
		t.Fatal(err)
	}
	if cm.Name != "b" || cm.Labels != nil || cm.Data != nil {
		t.Fatalf("FromMap kept old content: %+v", cm)
	}
	if cm.Kind != "ConfigMap" {
		t.Errorf("kind lost: %q", cm.Kind)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"a": "b"}}
	src := map[string]any{"c": map[string]any{"d": "e"}}
	if err := FromMap(src, u); err != nil {
		t.Fatal(err)
	}
	src["c"].(map[string]any)["d"] = "changed"
	if u.Object["c"].(map[string]any)["d"] != "e" || u.Object["a"] != nil {
		t.Fatalf("FromMap on unstructured: %v", u.Object)
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

func TestJSONCopy(t *testing.T) {
	m, err := JSONCopy(map[string]any{
		"a": 1, "b": int32(2), "c": uint(3), "d": float32(1.5), "e": []string{"x"},
		"f": map[string]string{"k": "v"}, "g": []any{map[string]any{"h": int8(4)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": int64(1), "b": int64(2), "c": int64(3), "d": float64(1.5), "e": []any{"x"},
		"f": map[string]any{"k": "v"}, "g": []any{map[string]any{"h": int64(4)}}}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("JSONCopy = %#v", m)
	}
	_, err = JSONCopy(map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": struct{}{}}}}})
	var pe *PathError
	if !errors.As(err, &pe) || pe.Path != "spec.ports[0].port" {
		t.Fatalf("JSONCopy of a struct: %v, want a PathError at spec.ports[0].port", err)
	}
	if _, err := JSONCopy(map[string]any{"n": uint64(math.MaxUint64)}); err == nil {
		t.Error("a uint64 past int64 was accepted")
	}
	// A nil list or map is JSON null (what the encoder writes), not empty:
	// a patch made from the copy removes it.
	m, err = JSONCopy(map[string]any{"n": 1, "l": []any(nil), "s": []string(nil), "m": map[string]any(nil), "t": map[string]string(nil),
		"e": []string{}})
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]any{"n": int64(1), "l": nil, "s": nil, "m": nil, "t": nil, "e": []any{}}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("JSONCopy of nil lists and maps = %#v, want %#v", m, want)
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
}

// CopyLabels copies the entries of maps of every size, small (cloned) and
// not, with room for extra more: the copy is not m, nor nil, and adding
// to it leaves m as it was.
func TestCopyLabels(t *testing.T) {
	for n := range 12 {
		for extra := range 3 {
			m := map[string]string{}
			for i := range n {
				m[fmt.Sprint("key-", i)] = fmt.Sprint("value-", i)
			}
			want := maps.Clone(m)
			c := CopyLabels(m, extra)
			if c == nil || !maps.Equal(c, m) {
				t.Fatalf("%d entries, extra %d: copy %v", n, extra, c)
			}
			for i := range extra {
				c[fmt.Sprint("extra-", i)] = "x"
			}
			delete(c, "key-0")
			if !maps.Equal(m, want) || len(c) != max(n-1, 0)+extra {
				t.Fatalf("%d entries, extra %d: m = %v, copy %v after changing the copy", n, extra, m, c)
			}
		}
	}
	if CopyLabels(nil, 2) == nil {
		t.Error("a copy of nil is nil")
	}
}

// TestEqualAgreesWithDeepEqual: Equal of typed objects, which compares
// field by field with the managedFields last, says what reflect.DeepEqual
// says, for every one and every pair of a set of changes to a Deployment
// (metadata, managedFields, spec, status, nil against empty).
func TestEqualAgreesWithDeepEqual(t *testing.T) {
	base := &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d", UID: "u1", ResourceVersion: "7", Generation: 2,
			Labels: map[string]string{"app": "d"}, Finalizers: []string{"example.com/f"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "o", UID: "u0", Controller: ptr.To(true)}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate,
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}}},
		Spec:   appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Conditions: []appsv1.DeploymentCondition{{Type: "Available", Status: "True"}}},
	}
	changes := map[string]func(*appsv1.Deployment){
		"none":              func(*appsv1.Deployment) {},
		"kind":              func(d *appsv1.Deployment) { d.Kind = "" },
		"label":             func(d *appsv1.Deployment) { d.Labels = map[string]string{"app": "e"} },
		"labels nil":        func(d *appsv1.Deployment) { d.Labels = nil },
		"annotations empty": func(d *appsv1.Deployment) { d.Annotations = map[string]string{} },
		"finalizer":         func(d *appsv1.Deployment) { d.Finalizers = append(d.Finalizers, "example.com/g") },
		"finalizers empty":  func(d *appsv1.Deployment) { d.Finalizers = []string{} },
		"resourceVersion":   func(d *appsv1.Deployment) { d.ResourceVersion = "8" },
		"creationTimestamp": func(d *appsv1.Deployment) { d.CreationTimestamp = metav1.Unix(1, 0) },
		"deletionTimestamp": func(d *appsv1.Deployment) { d.DeletionTimestamp = ptr.To(metav1.Unix(2, 0)) },
		"owner controller":  func(d *appsv1.Deployment) { d.OwnerReferences[0].Controller = ptr.To(false) },
		"managedFields raw": func(d *appsv1.Deployment) {
			d.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate,
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{}}`)}}}
		},
		"managedFields nil": func(d *appsv1.Deployment) { d.ManagedFields = nil },
		"replicas":          func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](3) },
		"replicas nil":      func(d *appsv1.Deployment) { d.Spec.Replicas = nil },
		"selector":          func(d *appsv1.Deployment) { d.Spec.Selector.MatchLabels["app"] = "e" },
		"status condition": func(d *appsv1.Deployment) {
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: "Available", Status: "False"}}
		},
		"observedGeneration":    func(d *appsv1.Deployment) { d.Status.ObservedGeneration = 3 },
		"status conditions nil": func(d *appsv1.Deployment) { d.Status.Conditions = nil },
	}
	names := slices.Sorted(maps.Keys(changes))
	for _, x := range names {
		for _, y := range names {
			a, b := base.DeepCopy(), base.DeepCopy()
			changes[x](a)
			changes[y](b)
			if got, want := Equal(a, b), reflect.DeepEqual(a, b); got != want {
				t.Errorf("%s against %s: Equal = %v, reflect.DeepEqual = %v", x, y, got, want)
			}
			changes[y](a) // both changes on a
			if got, want := Equal(a, b), reflect.DeepEqual(a, b); got != want {
				t.Errorf("%s and %s against %s: Equal = %v, reflect.DeepEqual = %v", x, y, y, got, want)
			}
		}
	}
	if !Equal(base, base) {
		t.Error("an object is not Equal to itself")
	}
}

package object

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// twoMetas is an API object with a second ObjectMeta field beside the
// embedded one (a CRD's pod template metadata, say).
type twoMetas struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Template          metav1.ObjectMeta `json:"template,omitempty"`
	Replicas          int               `json:"replicas,omitempty"`
}

func (t *twoMetas) DeepCopyObject() runtime.Object {
	c := *t
	t.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	t.Template.DeepCopyInto(&c.Template)
	return &c
}

// templateFirst is the same with the second ObjectMeta field first.
type templateFirst struct {
	Template          metav1.ObjectMeta `json:"template,omitempty"`
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (t *templateFirst) DeepCopyObject() runtime.Object {
	c := *t
	t.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	t.Template.DeepCopyInto(&c.Template)
	return &c
}

// TestEqualComparesEveryObjectMetaField: Equal must say what
// reflect.DeepEqual says of a type with two fields of type ObjectMeta,
// whichever of them differs and in whichever order they come.
func TestEqualComparesEveryObjectMetaField(t *testing.T) {
	pairs := map[string][2]runtime.Object{
		"template labels differ": {
			&twoMetas{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Template: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}}},
			&twoMetas{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Template: metav1.ObjectMeta{Labels: map[string]string{"app": "y"}}},
		},
		"metadata name differs": {
			&twoMetas{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
			&twoMetas{ObjectMeta: metav1.ObjectMeta{Name: "b"}},
		},
		"template first, template differs": {
			&templateFirst{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Template: metav1.ObjectMeta{Name: "x"}},
			&templateFirst{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Template: metav1.ObjectMeta{Name: "y"}},
		},
		"template first, metadata differs": {
			&templateFirst{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
			&templateFirst{ObjectMeta: metav1.ObjectMeta{Name: "b"}},
		},
		"template managedFields differ": {
			&twoMetas{Template: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}},
			&twoMetas{Template: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "n"}}}},
		},
		"equal": {
			&twoMetas{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Template: metav1.ObjectMeta{Name: "x"}, Replicas: 2},
			&twoMetas{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Template: metav1.ObjectMeta{Name: "x"}, Replicas: 2},
		},
	}
	for name, p := range pairs {
		if got, want := Equal(p[0], p[1]), reflect.DeepEqual(p[0], p[1]); got != want {
			t.Errorf("%s: Equal = %v, reflect.DeepEqual = %v", name, got, want)
		}
	}
}

// floaty has a float field, which is not equal to itself when NaN.
type floaty struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Ratio             float64   `json:"ratio"`
	Weights           []float64 `json:"weights"`
}

func (f *floaty) DeepCopyObject() runtime.Object {
	c := *f
	f.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.Weights = append([]float64(nil), f.Weights...)
	return &c
}

// TestEqualAgreesOnOddValues: NaN fields, shared slices, one object
// against itself, lists, nil pointers.
func TestEqualAgreesOnOddValues(t *testing.T) {
	nan := math.NaN()
	shared := []float64{nan}
	self := &floaty{Ratio: nan}
	var nilA, nilB *floaty
	pairs := map[string][2]runtime.Object{
		"NaN field":                {&floaty{Ratio: nan}, &floaty{Ratio: nan}},
		"itself with NaN":          {self, self},
		"shared slice holding NaN": {&floaty{Weights: shared}, &floaty{Weights: shared}},
		"own slices holding NaN":   {&floaty{Weights: []float64{nan}}, &floaty{Weights: []float64{nan}}},
		"nil pointers":             {nilA, nilB},
		"nil against empty":        {nilA, &floaty{}},
		"lists equal":              {&metav1.List{Items: []runtime.RawExtension{{Raw: []byte("{}")}}}, &metav1.List{Items: []runtime.RawExtension{{Raw: []byte("{}")}}}},
		"lists differ":             {&metav1.List{}, &metav1.List{Items: []runtime.RawExtension{}}},
		"managedFields nil, empty": {&floaty{ObjectMeta: metav1.ObjectMeta{ManagedFields: nil}}, &floaty{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{}}}},
	}
	for name, p := range pairs {
		if got, want := Equal(p[0], p[1]), reflect.DeepEqual(p[0], p[1]); got != want {
			t.Errorf("%s: Equal = %v, reflect.DeepEqual = %v", name, got, want)
		}
	}
}

// TestObjectMetaFieldsAreCompared: equalMetaButManagedFields names every
// field of ObjectMeta but ManagedFields; a field that k8s.io/apimachinery
// adds fails here until it is compared there.
func TestObjectMetaFieldsAreCompared(t *testing.T) {
	compared := []string{"Name", "GenerateName", "Namespace", "SelfLink", "UID", "ResourceVersion", "Generation",
		"CreationTimestamp", "DeletionTimestamp", "DeletionGracePeriodSeconds", "Labels", "Annotations",
		"OwnerReferences", "Finalizers", "ManagedFields"}
	var fields []string
	for f := range objectMetaType.Fields() {
		fields = append(fields, f.Name)
	}
	if !slices.Equal(fields, compared) {
		t.Errorf("ObjectMeta's fields are %v; equalMetaButManagedFields compares %v", fields, compared)
	}
	fields = nil
	for f := range reflect.TypeFor[metav1.OwnerReference]().Fields() {
		fields = append(fields, f.Name)
	}
	if want := []string{"APIVersion", "Kind", "Name", "UID", "Controller", "BlockOwnerDeletion"}; !slices.Equal(fields, want) {
		t.Errorf("OwnerReference's fields are %v; equalOwners compares %v", fields, want)
	}
}

// TestEqualAgreesOnEveryMetadataField: one change to each field of the
// metadata, nil against empty where the field may be either, on either
// side, says what reflect.DeepEqual says.
func TestEqualAgreesOnEveryMetadataField(t *testing.T) {
	grace := int64(30)
	now := metav1.Unix(5, 0)
	yes, no := true, false
	changes := map[string]func(*metav1.ObjectMeta){
		"none":                       func(*metav1.ObjectMeta) {},
		"name":                       func(m *metav1.ObjectMeta) { m.Name = "b" },
		"generateName":               func(m *metav1.ObjectMeta) { m.GenerateName = "b-" },
		"namespace":                  func(m *metav1.ObjectMeta) { m.Namespace = "other" },
		"selfLink":                   func(m *metav1.ObjectMeta) { m.SelfLink = "/x" },
		"uid":                        func(m *metav1.ObjectMeta) { m.UID = "u2" },
		"resourceVersion":            func(m *metav1.ObjectMeta) { m.ResourceVersion = "9" },
		"generation":                 func(m *metav1.ObjectMeta) { m.Generation = 3 },
		"creationTimestamp":          func(m *metav1.ObjectMeta) { m.CreationTimestamp = now },
		"creationTimestamp local":    func(m *metav1.ObjectMeta) { m.CreationTimestamp = metav1.NewTime(m.CreationTimestamp.Local()) },
		"deletionTimestamp":          func(m *metav1.ObjectMeta) { m.DeletionTimestamp = &now },
		"deletionGracePeriodSeconds": func(m *metav1.ObjectMeta) { m.DeletionGracePeriodSeconds = &grace },
		"labels nil":                 func(m *metav1.ObjectMeta) { m.Labels = nil },
		"labels empty":               func(m *metav1.ObjectMeta) { m.Labels = map[string]string{} },
		"label value":                func(m *metav1.ObjectMeta) { m.Labels = map[string]string{"app": ""} },
		"label key":                  func(m *metav1.ObjectMeta) { m.Labels = map[string]string{"ap": "a"} },
		"annotations nil":            func(m *metav1.ObjectMeta) { m.Annotations = nil },
		"annotations empty":          func(m *metav1.ObjectMeta) { m.Annotations = map[string]string{} },
		"finalizers nil":             func(m *metav1.ObjectMeta) { m.Finalizers = nil },
		"finalizers empty":           func(m *metav1.ObjectMeta) { m.Finalizers = []string{} },
		"finalizers order":           func(m *metav1.ObjectMeta) { m.Finalizers = []string{"y/g", "x/f"} },
		"ownerReferences empty":      func(m *metav1.ObjectMeta) { m.OwnerReferences = []metav1.OwnerReference{} },
		"ownerReferences":            func(m *metav1.ObjectMeta) { m.OwnerReferences = []metav1.OwnerReference{{Name: "o"}} },
		"owner controller":           func(m *metav1.ObjectMeta) { m.OwnerReferences = []metav1.OwnerReference{{Name: "o", Controller: &yes}} },
		"owner not controller":       func(m *metav1.ObjectMeta) { m.OwnerReferences = []metav1.OwnerReference{{Name: "o", Controller: &no}} },
		"owner blocks": func(m *metav1.ObjectMeta) {
			m.OwnerReferences = []metav1.OwnerReference{{Name: "o", BlockOwnerDeletion: &yes}}
		},
		"owner uid": func(m *metav1.ObjectMeta) { m.OwnerReferences = []metav1.OwnerReference{{Name: "o", UID: "x"}} },
		"owner kind": func(m *metav1.ObjectMeta) {
			m.OwnerReferences = []metav1.OwnerReference{{Name: "o", Kind: "K", APIVersion: "v1"}}
		},
		"owners two":              func(m *metav1.ObjectMeta) { m.OwnerReferences = []metav1.OwnerReference{{Name: "o"}, {Name: "p"}} },
		"deletionTimestamp other": func(m *metav1.ObjectMeta) { later := metav1.Unix(6, 0); m.DeletionTimestamp = &later },
		"grace other":             func(m *metav1.ObjectMeta) { g := int64(5); m.DeletionGracePeriodSeconds = &g },
		"managedFields empty":     func(m *metav1.ObjectMeta) { m.ManagedFields = []metav1.ManagedFieldsEntry{} },
	}
	base := func() *floaty {
		return &floaty{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "u1", ResourceVersion: "8",
			CreationTimestamp: metav1.Unix(1, 0), Labels: map[string]string{"app": "a"},
			Annotations: map[string]string{"note": "n"}, Finalizers: []string{"x/f", "y/g"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}
	}
	for x, cx := range changes {
		for y, cy := range changes {
			a, b := base(), base()
			cx(&a.ObjectMeta)
			cy(&b.ObjectMeta)
			if got, want := Equal(a, b), reflect.DeepEqual(a, b); got != want {
				t.Errorf("%s against %s: Equal = %v, reflect.DeepEqual = %v", x, y, got, want)
			}
		}
	}
}

// BenchmarkEqual: Equal against reflect.DeepEqual on a Deployment with
// four managedFields entries of 1.8 KB, equal, or differing in its
// resourceVersion, a label or its spec (what a reconcile's mutate or a
// write changes). Equal is not slower than DeepEqual in any of them
// (main's field-by-field loop was 14× slower on the resourceVersion and 7×
// on a label, comparing the spec first and each metadata field through
// reflection).
func BenchmarkEqual(b *testing.B) {
	raw := []byte(`{"f:spec":{` + strings.Repeat(`"f:x":{},`, 200) + `"f:y":{}}}`)
	var mf []metav1.ManagedFieldsEntry
	for _, m := range []string{"a", "b", "c", "d"} {
		mf = append(mf, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: raw}})
	}
	base := &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d", UID: "u1", ResourceVersion: "7", Generation: 2,
			Labels: map[string]string{"app": "d"}, Finalizers: []string{"example.com/f"}, ManagedFields: mf},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}}},
	}
	for _, c := range []struct {
		name   string
		change func(*appsv1.Deployment)
	}{
		{"equal", func(*appsv1.Deployment) {}},
		{"resourceVersion", func(d *appsv1.Deployment) { d.ResourceVersion = "8" }},
		{"label", func(d *appsv1.Deployment) { d.Labels = map[string]string{"app": "e"} }},
		{"spec", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](3) }},
	} {
		x, y := base.DeepCopy(), base.DeepCopy()
		c.change(y)
		b.Run(c.name+"/Equal", func(b *testing.B) {
			for b.Loop() {
				Equal(x, y)
			}
		})
		b.Run(c.name+"/DeepEqual", func(b *testing.B) {
			for b.Loop() {
				reflect.DeepEqual(x, y)
			}
		})
	}
}

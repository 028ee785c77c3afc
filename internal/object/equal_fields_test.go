package object

import (
	"math"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

package object

import (
	"encoding/json"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "k8s.io/apimachinery/pkg/util/json"
)

// CommonStatus is a status shared by several kinds, embedded inline in
// each one's status (as many operators do): its fields are the status's
// own in JSON.
type CommonStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

type inlineStatus struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            struct {
		CommonStatus `json:",inline"`
		Phase        string `json:"phase,omitempty"`
	} `json:"status,omitempty"`
}

type inlinePointerStatus struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            *struct {
		*CommonStatus `json:",inline"`
	} `json:"status,omitempty"`
}

// An embedded struct with a JSON name is a field of that name.
type namedEmbeddedStatus struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	CommonStatus      `json:"status,omitempty"`
}

// StatusField finds what encoding/json (and the Kubernetes decoder) decode
// status.observedGeneration and status.conditions into, where the status
// embeds them inline: the JSON round trip is the oracle.
func TestStatusFieldEmbedded(t *testing.T) {
	const in = `{"status":{"observedGeneration":7,"conditions":[{"type":"Ready","status":"True"}]}}`
	for _, obj := range []any{&inlineStatus{}, &inlinePointerStatus{}, &namedEmbeddedStatus{}} {
		t.Run(reflect.TypeOf(obj).Elem().Name(), func(t *testing.T) {
			typ := reflect.TypeOf(obj)
			if ft, ok := StatusFieldType(typ, "observedGeneration"); !ok || ft.Kind() != reflect.Int64 {
				t.Errorf("StatusFieldType(observedGeneration) = %v, %v; want int64", ft, ok)
			}
			if !HasConditionList(typ) {
				t.Error("HasConditionList = false")
			}
			if err := json.Unmarshal([]byte(in), obj); err != nil {
				t.Fatal(err)
			}
			v, ok := StatusValue(obj, "observedGeneration", false)
			if !ok || v.Int() != 7 {
				t.Errorf("StatusValue(observedGeneration) = %v, %v; want 7", v, ok)
			}
			if l := ConditionList(obj, false); l == nil || len(*l) != 1 || (*l)[0].Type != "Ready" {
				t.Errorf("ConditionList = %v, want the Ready condition decoded", l)
			}
		})
	}
}

// A nil status, or a nil embedded status, is allocated only when asked.
func TestStatusValueEmbeddedNilPointer(t *testing.T) {
	obj := &inlinePointerStatus{}
	if _, ok := StatusValue(obj, "observedGeneration", false); ok {
		t.Error("StatusValue without alloc on a nil status: ok")
	}
	if obj.Status != nil {
		t.Fatal("StatusValue without alloc allocated the status")
	}
	l := ConditionList(obj, true)
	if l == nil {
		t.Fatal("ConditionList with alloc = nil")
	}
	*l = []metav1.Condition{{Type: "Ready"}}
	if obj.Status == nil || obj.Status.CommonStatus == nil || len(obj.Status.Conditions) != 1 {
		t.Errorf("the list set is not the object's: %+v", obj.Status)
	}
	obj.Status.CommonStatus = nil
	if _, ok := StatusValue(obj, "observedGeneration", false); ok {
		t.Error("StatusValue without alloc on a nil embedded status: ok")
	}
}

// Every Patch reads the status this way (observedGeneration, the
// conditions before and after): once a type is known, without allocating.
func TestStatusValueAllocatesNothing(t *testing.T) {
	obj := &inlineStatus{}
	StatusValue(obj, "observedGeneration", false)
	ConditionList(obj, false)
	if n := testing.AllocsPerRun(100, func() {
		StatusValue(obj, "observedGeneration", false)
		ConditionList(obj, false)
	}); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

// untaggedStatus has no json tags in its status: encoding/json would fill
// ObservedGeneration from "observedGeneration" (it folds case), the
// Kubernetes decoder the client uses does not (its names are exact).
type untaggedStatus struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            struct {
		ObservedGeneration int64
		Conditions         []metav1.Condition
	} `json:"status,omitempty"`
}

// StatusField finds only what the API server's answer is decoded into:
// the Kubernetes JSON decoder (k8s.io/apimachinery's util/json, as the
// client's codec) is the oracle.
func TestStatusFieldMatchesTheKubernetesDecoder(t *testing.T) {
	for _, obj := range []any{&untaggedStatus{}, &inlineStatus{}} {
		t.Run(reflect.TypeOf(obj).Elem().Name(), func(t *testing.T) {
			if err := kjson.Unmarshal([]byte(`{"status":{"observedGeneration":7}}`), obj); err != nil {
				t.Fatal(err)
			}
			v, found := StatusValue(obj, "observedGeneration", false)
			decoded := found && v.Int() == 7
			if found != decoded {
				t.Errorf("StatusValue found %v, holding %v: the decoder filled it: %v", found, v, decoded)
			}
			if _, typeFound := StatusFieldType(reflect.TypeOf(obj), "observedGeneration"); typeFound != decoded {
				t.Errorf("StatusFieldType found = %v, the decoder filled it: %v", typeFound, decoded)
			}
		})
	}
}

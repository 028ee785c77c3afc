package patch

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/steadyk8s/steady/internal/object"
)

// strictSpec encodes itself and refuses to be encoded unset, as a type
// whose MarshalJSON validates (an enum, a required field) may.
type strictSpec struct{ Mode string }

func (s strictSpec) MarshalJSON() ([]byte, error) {
	if s.Mode == "" {
		return nil, errors.New("mode unset")
	}
	return []byte(`{"mode":"` + s.Mode + `"}`), nil
}

type strictObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              strictSpec        `json:"spec"`
	Status            map[string]string `json:"status,omitempty"`
}

func (o *strictObject) DeepCopyObject() runtime.Object {
	c := *o
	o.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.Status = make(map[string]string, len(o.Status))
	for k, v := range o.Status {
		c.Status[k] = v
	}
	return &c
}

// TestToMapsOfAFieldThatCannotBeZero: a top-level field equal in both
// objects is left out, but not by converting its zero value, which its
// type may refuse to encode: the change converts as the whole objects do.
func TestToMapsOfAFieldThatCannotBeZero(t *testing.T) {
	before := &strictObject{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Spec: strictSpec{Mode: "fast"}, Status: map[string]string{"phase": "A"}}
	obj := before.DeepCopyObject().(*strictObject)
	obj.Status["phase"] = "B"
	if _, err := object.ToMapWithoutManagedFields(obj); err != nil {
		t.Fatalf("the object converts whole: %v", err)
	}
	if _, _, err := toMaps(before, obj, Options{}); err != nil {
		t.Errorf("toMaps: %v", err)
	}
}

package conditions

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// listSetter is a Setter over a []metav1.Condition held by an object whose
// Go type has no GetConditions method. It embeds the object, so marks see
// its generation.
type listSetter struct {
	metav1.Object
	list *[]metav1.Condition
}

var _ Setter = listSetter{}

// On returns a Setter over the condition list list points to, in obj: the
// way to mark conditions on a type you do not own that carries
// []metav1.Condition without GetConditions and SetConditions (a core
// Service's status.conditions, another project's API), with no adapter to
// write:
//
//	conditions.MarkTrue(conditions.On(svc, &svc.Status.Conditions), "IPAllocated", "Allocated", "%s", ip)
//
// Marks on it change *list, and take ObservedGeneration from obj.
func On(obj metav1.Object, list *[]metav1.Condition) Setter {
	return listSetter{Object: obj, list: list}
}

// GetConditions implements Getter.
func (s listSetter) GetConditions() []metav1.Condition { return *s.list }

// SetConditions implements Setter.
func (s listSetter) SetConditions(conds []metav1.Condition) { *s.list = conds }

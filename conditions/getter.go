package conditions

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Get returns the condition of the given type, or nil. The result points
// into the object's conditions; copy it before changing it. Get(obj, t) !=
// nil says whether the object has it, and its Status whether it is False.
func Get(obj Getter, conditionType string) *metav1.Condition {
	return meta.FindStatusCondition(obj.GetConditions(), conditionType)
}

// IsTrue reports whether the condition is present with status True.
func IsTrue(obj Getter, conditionType string) bool {
	return meta.IsStatusConditionTrue(obj.GetConditions(), conditionType)
}

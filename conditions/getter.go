package conditions

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Get returns the condition of the given type, or nil. The result points
// into the object's conditions; copy it before changing it. Get(obj, t) !=
// nil says whether the object has it, and its Status whether it is False.
func Get(obj Getter, conditionType string) *metav1.Condition {
	conds := obj.GetConditions()
	for i := range conds {
		if conds[i].Type == conditionType {
			return &conds[i]
		}
	}
	return nil
}

// IsTrue reports whether the condition is present with status True.
func IsTrue(obj Getter, conditionType string) bool {
	return hasStatus(obj, conditionType, metav1.ConditionTrue)
}

// isUnknown (for the tests) reports whether the condition is absent or has status Unknown.
func isUnknown(obj Getter, conditionType string) bool {
	c := Get(obj, conditionType)
	return c == nil || c.Status == metav1.ConditionUnknown
}

func hasStatus(obj Getter, conditionType string, s metav1.ConditionStatus) bool {
	c := Get(obj, conditionType)
	return c != nil && c.Status == s
}

package conditions

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	capiconditions "sigs.k8s.io/cluster-api/util/conditions"
)

// Set adds or updates the condition of c.Type and reports whether the
// object changed. ObservedGeneration is taken from the object's generation
// when it is a metav1.Object; LastTransitionTime is kept unless the status
// flips (a zero one in c means now).
func Set(obj Setter, c metav1.Condition) bool {
	before := obj.GetConditions()
	snapshot := make([]metav1.Condition, len(before))
	copy(snapshot, before)
	capiconditions.Set(obj, c, capiconditions.ConditionSortFunc(less))
	return !equality.Semantic.DeepEqual(snapshot, obj.GetConditions())
}

// MarkTrue sets the condition to True with the given reason and message
// (a format with args) and reports whether the object changed.
func MarkTrue(obj Setter, conditionType, reason, messageFormat string, args ...any) bool {
	return mark(obj, conditionType, metav1.ConditionTrue, reason, messageFormat, args)
}

// MarkFalse sets the condition to False and reports whether the object
// changed.
func MarkFalse(obj Setter, conditionType, reason, messageFormat string, args ...any) bool {
	return mark(obj, conditionType, metav1.ConditionFalse, reason, messageFormat, args)
}

// MarkUnknown sets the condition to Unknown and reports whether the object
// changed.
func MarkUnknown(obj Setter, conditionType, reason, messageFormat string, args ...any) bool {
	return mark(obj, conditionType, metav1.ConditionUnknown, reason, messageFormat, args)
}

func mark(obj Setter, conditionType string, status metav1.ConditionStatus, reason, messageFormat string, args []any) bool {
	msg := messageFormat
	if len(args) > 0 {
		msg = fmt.Sprintf(messageFormat, args...)
	}
	return Set(obj, metav1.Condition{Type: conditionType, Status: status, Reason: reason, Message: msg})
}

// Delete removes the condition of the given type and reports whether it was
// there.
func Delete(obj Setter, conditionType string) bool {
	if !Has(obj, conditionType) {
		return false
	}
	capiconditions.Delete(obj, conditionType)
	return true
}

// less orders conditions for people reading kubectl output: Available and
// Ready first, Deleting and Paused last, the rest alphabetical.
func less(a, b metav1.Condition) bool {
	ra, rb := rank(a.Type), rank(b.Type)
	return ra < rb || (ra == rb && a.Type < b.Type)
}

func rank(conditionType string) int {
	switch conditionType {
	case "Available":
		return 0
	case Ready:
		return 1
	case "Deleting":
		return 3
	case "Paused":
		return 4
	}
	return 2
}

package conditions

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The limits, the fitting, the summary and the names that only the tests
// use, for the external tests.
const (
	MaxMessageLength       = maxMessageLength
	MaxReasonLength        = maxReasonLength
	MaxTypeLength          = maxTypeLength
	ReasonConditionMissing = reasonConditionMissing
)

var (
	FitMessage = fitMessage
	FitReason  = fitReason
	IsUnknown  = isUnknown
)

// isUnknown reports whether the condition is absent or has status Unknown.
func isUnknown(obj Getter, conditionType string) bool {
	c := Get(obj, conditionType)
	return c == nil || c.Status == metav1.ConditionUnknown
}

package conditions

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Set adds or updates the condition of c.Type and reports whether the
// object changed. ObservedGeneration is taken from the object's generation
// when it is a metav1.Object; LastTransitionTime is kept unless the status
// flips (a zero one in c means now).
//
// The condition is made to fit the limits the API server enforces on
// metav1.Condition, so that one over-long message never gets the whole
// status write refused: a message over 32,768 bytes is cut on
// a character boundary and ends with a marker saying how much was cut
// ("… [cut 7232 bytes]"); a reason is made to match the API's pattern
// (characters outside letters, digits, '_', ',' and ':' become '_', a reason
// not starting with a letter gets an "R" in front, ',' and ':' at its end
// are dropped) and cut to 1,024 bytes. An empty reason stays
// empty.
func Set(obj Setter, c metav1.Condition) bool {
	c.Message = fitMessage(c.Message)
	c.Reason = fitReason(c.Reason)
	if obj == nil || reflect.ValueOf(obj).Kind() == reflect.Pointer && reflect.ValueOf(obj).IsNil() {
		return false
	}
	if m, ok := obj.(metav1.Object); ok {
		c.ObservedGeneration = m.GetGeneration()
	}
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = metav1.Now()
	}
	// The API server stores seconds: an in-memory time finer than that
	// would differ from the next read.
	c.LastTransitionTime.Time = c.LastTransitionTime.Truncate(time.Second)
	conds := slices.Clone(obj.GetConditions())
	if !meta.SetStatusCondition(&conds, c) {
		return false
	}
	slices.SortStableFunc(conds, compare)
	obj.SetConditions(conds)
	return true
}

// The limits of metav1.Condition that the API server enforces.
const (
	// maxMessageLength is the longest message a condition may have.
	maxMessageLength = 32768
	// maxReasonLength is the longest reason a condition may have.
	maxReasonLength = 1024
)

// fitMessage returns msg if it fits maxMessageLength, else msg cut on a
// character boundary so that, with a marker saying how many bytes were cut
// appended, it does.
func fitMessage(msg string) string {
	if len(msg) <= maxMessageLength {
		return msg
	}
	marker := func(n int) string { return fmt.Sprintf("… [cut %d bytes]", n) }
	keep := maxMessageLength - len(marker(len(msg)))
	for keep > 0 && !utf8.RuneStart(msg[keep]) {
		keep--
	}
	return msg[:keep] + marker(len(msg)-keep)
}

// fitReason returns reason made to match the API's pattern for a condition
// reason (^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$) and maxReasonLength;
// an empty reason stays empty, a valid one is returned as it is.
func fitReason(reason string) string {
	if reason == "" || validReason(reason) {
		return reason
	}
	b := make([]byte, 0, len(reason)+1)
	for i := 0; i < len(reason); i++ {
		switch ch := reason[i]; {
		case ch >= 'A' && ch <= 'Z', ch >= 'a' && ch <= 'z', ch >= '0' && ch <= '9', ch == '_', ch == ',', ch == ':':
			b = append(b, ch)
		default:
			b = append(b, '_')
		}
	}
	if c := b[0]; !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
		b = append([]byte{'R'}, b...)
	}
	b = b[:min(len(b), maxReasonLength)]
	for len(b) > 1 && (b[len(b)-1] == ',' || b[len(b)-1] == ':') {
		b = b[:len(b)-1]
	}
	return string(b)
}

// validReason reports whether r fits metav1.Condition's reason pattern,
// ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$, and length (a loop, not a
// regular expression: it runs on every mark).
func validReason(r string) bool {
	if r == "" || len(r) > maxReasonLength {
		return false
	}
	letter := func(c byte) bool { return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }
	if !letter(r[0]) {
		return false
	}
	for i := 1; i < len(r); i++ {
		switch c := r[i]; {
		case letter(c), c >= '0' && c <= '9', c == '_':
		case (c == ',' || c == ':') && i < len(r)-1:
		default:
			return false
		}
	}
	return true
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
	if Get(obj, conditionType) == nil {
		return false
	}
	obj.SetConditions(slices.DeleteFunc(slices.Clone(obj.GetConditions()), func(c metav1.Condition) bool { return c.Type == conditionType }))
	return true
}

// compare orders conditions for people reading kubectl output: Available and
// Ready first, Deleting and Paused last, the rest alphabetical.
func compare(a, b metav1.Condition) int {
	return cmp.Or(cmp.Compare(rank(a.Type), rank(b.Type)), strings.Compare(a.Type, b.Type))
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

package conditions

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxTypeLength is the longest type a condition may have, 316 bytes.
const maxTypeLength = 316

// Validate checks c against what the API server enforces on a
// metav1.Condition (the schema controller-gen writes for it): a type that
// matches its pattern ("Ready", "example.com/Synced") within 316 bytes, a
// status of True, False or Unknown, a reason that matches its pattern
// within 1,024 bytes (an empty one is not checked: cluster-api's v1beta1
// conditions may have none), a message within 32,768 bytes. It returns a [*FieldError] whose Field is the
// condition's field at fault ("type", "status", "reason" or "message") and
// whose Object is empty, for the caller to fill. [Set] fits the reason and
// the message, but does not change a type or a status.
func Validate(c metav1.Condition) error {
	bad := func(field, format string, args ...any) error {
		return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
	}
	switch {
	case !validType(c.Type):
		return bad("type", "%q is not a condition type (a name like Ready or example.com/Synced, at most %d bytes)", c.Type, maxTypeLength)
	case c.Status != metav1.ConditionTrue && c.Status != metav1.ConditionFalse && c.Status != metav1.ConditionUnknown:
		return bad("status", "%q is not True, False or Unknown", c.Status)
	case c.Reason != "" && !validReason(c.Reason):
		return bad("reason", "%q is not a reason (a letter, then letters, digits, '_', ',' or ':', not ending with ',' or ':'; at most %d bytes; conditions.Set fits a reason)", c.Reason, maxReasonLength)
	case len(c.Message) > maxMessageLength:
		return bad("message", "%d bytes, over %d (conditions.Set fits a message)", len(c.Message), maxMessageLength)
	}
	return nil
}

// validType reports whether t matches metav1.Condition's pattern for a
// type, ^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$,
// within [maxTypeLength]: an optional DNS-subdomain prefix and a slash,
// then a name.
func validType(t string) bool {
	if len(t) == 0 || len(t) > maxTypeLength {
		return false
	}
	lower := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
	alnum := func(c byte) bool { return lower(c) || c >= 'A' && c <= 'Z' }
	name := t
	if prefix, rest, ok := strings.Cut(t, "/"); ok {
		name = rest
		// Labels of [a-z0-9-], each starting and ending with [a-z0-9].
		start := 0
		for j := 0; j <= len(prefix); j++ {
			if j < len(prefix) && prefix[j] != '.' {
				if c := prefix[j]; !lower(c) && c != '-' {
					return false
				}
				continue
			}
			if j == start || !lower(prefix[start]) || !lower(prefix[j-1]) {
				return false
			}
			start = j + 1
		}
	}
	if len(name) == 0 || !alnum(name[0]) || !alnum(name[len(name)-1]) {
		return false
	}
	for i := 1; i < len(name)-1; i++ {
		if c := name[i]; !alnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

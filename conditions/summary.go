package conditions

import (
	"cmp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// SummaryOptions configures [SetSummary]; it is the option, as
// client.ListOptions is a client.ListOption:
//
//	conditions.SetSummary(obj, conditions.Ready, conditions.SummaryOptions{
//		ConditionTypes: []string{"DatabaseReady", "BackupReady", "Degraded"}, NegativePolarity: []string{"Degraded"}})
type SummaryOptions struct {
	// ConditionTypes are summarized, in this order of importance; empty
	// means every condition on the object but the summary itself.
	ConditionTypes []string
	// NegativePolarity are the types for which True is bad. Reconciling and
	// Stalled always are.
	NegativePolarity []string
	// IgnoreIfMissing are types that do not count while absent; other
	// absent types make the summary Unknown.
	IgnoreIfMissing []string
	// TrueReason is the reason of a True summary; empty means "Succeeded".
	TrueReason string
}

// SummaryOption configures a summary; [SummaryOptions] is the one.
type SummaryOption interface {
	ApplyToSummary(*SummaryOptions)
}

// ApplyToSummary implements [SummaryOption]: the fields set in s replace
// those of o, as with client.ListOptions.
func (s SummaryOptions) ApplyToSummary(o *SummaryOptions) {
	if s.ConditionTypes != nil {
		o.ConditionTypes = s.ConditionTypes
	}
	if s.NegativePolarity != nil {
		o.NegativePolarity = s.NegativePolarity
	}
	if s.IgnoreIfMissing != nil {
		o.IgnoreIfMissing = s.IgnoreIfMissing
	}
	if s.TrueReason != "" {
		o.TrueReason = s.TrueReason
	}
}

var _ SummaryOption = SummaryOptions{}

// ReasonSucceeded is the default reason of a True summary.
const ReasonSucceeded = "Succeeded"

// reasonConditionMissing is the reason of an Unknown summary decided by a
// condition that was not reported yet.
const reasonConditionMissing = "ConditionMissing"

// newSummary computes the condition of type targetType that SetSummary
// sets.
func newSummary(obj Getter, targetType string, opts ...SummaryOption) metav1.Condition {
	o := SummaryOptions{}
	for _, opt := range opts {
		opt.ApplyToSummary(&o)
	}
	negative := sets.New(append([]string{Reconciling, Stalled}, o.NegativePolarity...)...)
	ignoreMissing := sets.New(o.IgnoreIfMissing...)
	types := o.ConditionTypes
	if len(types) == 0 {
		for _, c := range obj.GetConditions() {
			if c.Type != targetType {
				types = append(types, c.Type)
			}
		}
	}

	var bad, unknown []metav1.Condition
	for _, t := range types {
		c := Get(obj, t)
		switch {
		case c == nil && ignoreMissing.Has(t):
		case c == nil:
			unknown = append(unknown, metav1.Condition{Type: t, Reason: reasonConditionMissing, Message: "not reported yet"})
		case c.Status == metav1.ConditionUnknown:
			unknown = append(unknown, *c)
		case (c.Status == metav1.ConditionTrue) == negative.Has(t):
			bad = append(bad, *c)
		}
	}
	summary := metav1.Condition{Type: targetType}
	switch {
	case len(bad) > 0:
		summary.Status, summary.Reason, summary.Message = metav1.ConditionFalse, bad[0].Reason, messages(bad)
	case len(unknown) > 0:
		summary.Status, summary.Reason, summary.Message = metav1.ConditionUnknown, unknown[0].Reason, messages(unknown)
	default:
		summary.Status, summary.Reason = metav1.ConditionTrue, cmp.Or(o.TrueReason, ReasonSucceeded)
	}
	summary.Message, summary.Reason = fitMessage(summary.Message), fitReason(summary.Reason)
	return summary
}

// SetSummary sets a condition of type targetType computed from the object's
// other conditions and reports whether the object changed. It is False when
// any summarized condition is bad (False, or True for negative polarity),
// Unknown when none is bad but one is Unknown or missing (with the reason
// ConditionMissing), and True otherwise. A False or Unknown summary carries
// the reason of the first condition, in the order of ConditionTypes, that
// decided it, and the messages of all that did, as "Type: message; ...",
// cut to fit the limits of metav1.Condition (see [Set]).
func SetSummary(obj Setter, targetType string, opts ...SummaryOption) bool {
	return Set(obj, newSummary(obj, targetType, opts...))
}

func messages(conds []metav1.Condition) string {
	parts := make([]string, len(conds))
	for i, c := range conds {
		parts[i] = c.Type + ": " + cmp.Or(c.Message, c.Reason)
	}
	return strings.Join(parts, "; ")
}

package check

import (
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// Rule names why a [Finding] makes its object unhealthy.
type Rule string

// The rules [Evaluate] applies.
const (
	// RuleNotTrue: a Ready or Available condition is False or Unknown.
	RuleNotTrue Rule = "NotTrue"
	// RuleProblemTrue: a Stalled or Degraded condition is True.
	RuleProblemTrue Rule = "ProblemTrue"
	// RuleConditionStale: a condition's observedGeneration is older than
	// metadata.generation (the condition speaks of an older spec).
	RuleConditionStale Rule = "ConditionStale"
	// RuleStatusStale: status.observedGeneration is older than
	// metadata.generation.
	RuleStatusStale Rule = "StatusStale"
	// RuleNotCurrent: kstatus computes InProgress, Failed or Terminating.
	RuleNotCurrent Rule = "NotCurrent"
)

// The Condition of findings that do not come from a condition.
const (
	// KstatusCondition is the Condition of a finding from kstatus.
	KstatusCondition = "kstatus"
	// ObservedGenerationCondition is the Condition of a finding about
	// status.observedGeneration.
	ObservedGenerationCondition = "status.observedGeneration"
)

// Finding is one row of the report: why an object is unhealthy (Rule set),
// or, for a healthy object, the condition or kstatus result that says it is
// healthy (Rule empty).
type Finding struct {
	// Condition is the condition's type, or [KstatusCondition] or
	// [ObservedGenerationCondition].
	Condition string `json:"condition"`
	// Status is the condition's status (True, False, Unknown), the kstatus
	// status (InProgress, Failed, Terminating, Current) or the observed
	// generation.
	Status string `json:"status"`
	// Reason is the condition's or kstatus's reason.
	Reason string `json:"reason,omitempty"`
	// Message is the condition's or kstatus's message.
	Message string `json:"message,omitempty"`
	// Since is the condition's lastTransitionTime; for kstatus and
	// status.observedGeneration rows the object's creation (its deletion
	// for Terminating). Nil when unknown.
	Since *time.Time `json:"since,omitempty"`
	// Rule is why this makes the object unhealthy; empty for a healthy
	// object's row.
	Rule Rule `json:"rule,omitempty"`
}

// Health is what [Evaluate] says of one object.
type Health struct {
	// Healthy is true when no rule found a problem.
	Healthy bool
	// Findings are the problems, one per failing condition or rule; for a
	// healthy object one row saying why it is healthy (its Ready or
	// Available condition, else its kstatus result).
	Findings []Finding
}

// condition is one entry of status.conditions, of any shape.
type condition struct {
	typ, status, reason, message string
	since                        *time.Time
	observedGeneration           int64
}

// Evaluate applies the rules to one object, as read from the API server
// (apiVersion and kind set):
//
//   - a Ready or Available condition that is False or Unknown ([RuleNotTrue]),
//     except the Ready=False of a Pod that has Succeeded (it ran to
//     completion);
//   - a Stalled or Degraded condition that is True ([RuleProblemTrue]);
//   - any other condition whose observedGeneration is older than
//     metadata.generation ([RuleConditionStale]);
//   - status.observedGeneration older than metadata.generation
//     ([RuleStatusStale]);
//   - kstatus (sigs.k8s.io/cli-utils/pkg/kstatus) InProgress, Failed or
//     Terminating ([RuleNotCurrent]), reported only when no rule above found
//     something (kstatus mostly restates them), or when Terminating.
func Evaluate(u *unstructured.Unstructured) Health {
	generation := u.GetGeneration()
	conds := conditionsOf(u)
	podDone := u.GroupVersionKind().Group == "" && u.GetKind() == "Pod" && nestedString(u.Object, "status", "phase") == "Succeeded"
	var findings []Finding
	for _, c := range conds {
		f := Finding{Condition: c.typ, Status: c.status, Reason: c.reason, Message: c.message, Since: c.since}
		switch {
		case (c.typ == "Ready" || c.typ == "Available") && c.status != "True" && !podDone:
			f.Rule = RuleNotTrue
		case (c.typ == "Stalled" || c.typ == "Degraded") && c.status == "True":
			f.Rule = RuleProblemTrue
		case c.observedGeneration > 0 && generation > 0 && c.observedGeneration < generation:
			f.Rule = RuleConditionStale
			f.Message = fmt.Sprintf("observedGeneration %d lags generation %d", c.observedGeneration, generation)
			if c.message != "" {
				f.Message += ": " + c.message
			}
		default:
			continue
		}
		findings = append(findings, f)
	}
	created := u.GetCreationTimestamp().Time
	createdPtr := &created
	if created.IsZero() {
		createdPtr = nil
	}
	if og, ok := nestedInt64(u.Object, "status", "observedGeneration"); ok && generation > 0 && og < generation {
		findings = append(findings, Finding{
			Condition: ObservedGenerationCondition,
			Status:    strconv.FormatInt(og, 10),
			Reason:    "LatestGenerationNotObserved",
			Message:   fmt.Sprintf("generation is %d, but the latest observed generation is %d", generation, og),
			Since:     createdPtr,
			Rule:      RuleStatusStale,
		})
	}
	res, err := status.Compute(u)
	if err == nil && res != nil {
		switch res.Status {
		case status.InProgressStatus, status.FailedStatus, status.TerminatingStatus:
			if len(findings) == 0 || res.Status == status.TerminatingStatus {
				f := Finding{Condition: KstatusCondition, Status: string(res.Status), Message: res.Message, Since: createdPtr, Rule: RuleNotCurrent}
				if len(res.Conditions) > 0 {
					f.Reason = res.Conditions[0].Reason
				}
				if ts := u.GetDeletionTimestamp(); res.Status == status.TerminatingStatus && ts != nil {
					t := ts.Time
					f.Reason, f.Since = "Terminating", &t
				}
				findings = append(findings, f)
			}
		}
	}
	if len(findings) > 0 {
		return Health{Findings: findings}
	}
	return Health{Healthy: true, Findings: []Finding{healthyRow(conds, res, createdPtr)}}
}

// healthyRow is the row of a healthy object: its Ready condition, else its
// Available condition, else kstatus.
func healthyRow(conds []condition, res *status.Result, created *time.Time) Finding {
	for _, typ := range []string{"Ready", "Available"} {
		for _, c := range conds {
			if c.typ == typ {
				return Finding{Condition: c.typ, Status: c.status, Reason: c.reason, Message: c.message, Since: c.since}
			}
		}
	}
	f := Finding{Condition: KstatusCondition, Status: string(status.UnknownStatus), Since: created}
	if res != nil {
		f.Status, f.Message = string(res.Status), res.Message
	}
	return f
}

// conditionsOf reads status.conditions, whatever the shape of its entries
// (metav1.Condition, the older core shape, cluster-api's): entries without a
// type are left out.
func conditionsOf(u *unstructured.Unstructured) []condition {
	raw, ok := nested(u.Object, "status", "conditions").([]any)
	if !ok {
		return nil
	}
	var out []condition
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		c := condition{typ: str(m["type"]), status: str(m["status"]), reason: str(m["reason"]), message: str(m["message"])}
		if c.typ == "" {
			continue
		}
		if ts, err := time.Parse(time.RFC3339, str(m["lastTransitionTime"])); err == nil {
			c.since = &ts
		}
		c.observedGeneration, _ = toInt64(m["observedGeneration"])
		out = append(out, c)
	}
	return out
}

func nested(obj map[string]any, fields ...string) any {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[f]
	}
	return cur
}

func nestedString(obj map[string]any, fields ...string) string { return str(nested(obj, fields...)) }

func nestedInt64(obj map[string]any, fields ...string) (int64, bool) {
	return toInt64(nested(obj, fields...))
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// toInt64 reads a JSON number as the API machinery decodes it (int64) or as
// encoding/json does (float64).
func toInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case float64:
		return int64(n), true
	}
	return 0, false
}

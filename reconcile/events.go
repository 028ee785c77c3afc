package reconcile

import (
	"cmp"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// recordReadyFlip records an Event on obj when the Ready condition's status
// in after (the answer to a status write) differs from before's (the state
// that write was rebased on). Conditions are read as JSON, so any shape
// with type, status, reason and message counts.
func recordReadyFlip(rec record.EventRecorder, before, after map[string]any, obj client.Object) {
	was, _ := readyIn(before)
	now, ok := readyIn(after)
	if !ok || now["status"] == was["status"] {
		return
	}
	reason, _ := now["reason"].(string)
	msg, _ := now["message"].(string)
	reason = cmp.Or(reason, "NoReason")
	if now["status"] == "True" {
		rec.Eventf(obj, "Normal", "Ready", "%s: %s", reason, msg)
		return
	}
	rec.Eventf(obj, "Warning", "NotReady", "%s: %s", reason, msg)
}

func readyIn(m map[string]any) (map[string]any, bool) {
	list, _, _ := unstructured.NestedSlice(m, "status", "conditions")
	for _, item := range list {
		if c, ok := item.(map[string]any); ok && c["type"] == "Ready" {
			return c, true
		}
	}
	return nil, false
}

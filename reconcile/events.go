package reconcile

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

// recordReadyFlip records an Event on after when its Ready condition's
// status differs from before's. Conditions are read as JSON, so any shape
// with type, status, reason and message counts.
func recordReadyFlip(rec EventRecorder, before, after client.Object) {
	was, _ := readyOf(before)
	now, ok := readyOf(after)
	if !ok || now["status"] == was["status"] {
		return
	}
	reason, _ := now["reason"].(string)
	msg, _ := now["message"].(string)
	if reason == "" {
		reason = "NoReason"
	}
	if now["status"] == "True" {
		rec.Eventf(after, "Normal", "Ready", "%s: %s", reason, msg)
		return
	}
	rec.Eventf(after, "Warning", "NotReady", "%s: %s", reason, msg)
}

// wroteStatus reports whether status was among the writes (alone, or with
// the rest of an object without a status subresource).
func wroteStatus(wrote []string) bool {
	for _, w := range wrote {
		if strings.HasPrefix(w, "status") {
			return true
		}
	}
	return false
}

func readyOf(obj client.Object) (map[string]any, bool) {
	m, err := object.ToMap(obj)
	if err != nil {
		return nil, false
	}
	list, _, _ := unstructured.NestedSlice(m, "status", "conditions")
	for _, item := range list {
		if c, ok := item.(map[string]any); ok && c["type"] == "Ready" {
			return c, true
		}
	}
	return nil, false
}

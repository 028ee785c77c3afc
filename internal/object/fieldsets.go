package object

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FieldSet is one field manager's field set, the fieldsV1 tree of a
// managedFields entry ({"f:spec": {"f:replicas": {}}}) decoded, or a node
// of it.
type FieldSet struct {
	Manager string
	Set     map[string]any
}

// FieldSets decodes the field sets of obj's managedFields entries, but
// those skip names (nil: none).
func FieldSets(obj metav1.Object, skip func(metav1.ManagedFieldsEntry) bool) []FieldSet {
	var sets []FieldSet
	for _, f := range obj.GetManagedFields() {
		if f.FieldsV1 == nil || skip != nil && skip(f) {
			continue
		}
		var set map[string]any
		if json.Unmarshal(f.FieldsV1.GetRawBytes(), &set) == nil {
			sets = append(sets, FieldSet{f.Manager, set})
		}
	}
	return sets
}

// FieldChildren returns the nodes under the key k of nodes, field set
// trees: "f:name" for a field, "k:{...}" or "v:..." for a list element.
func FieldChildren(nodes []map[string]any, k string) []map[string]any {
	var out []map[string]any
	for _, n := range nodes {
		if c, ok := n[k].(map[string]any); ok {
			out = append(out, c)
		}
	}
	return out
}

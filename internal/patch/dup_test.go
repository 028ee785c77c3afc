package patch

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// A path named again in ConditionLists (metadata.ownerReferences, which the
// engine already rebases by uid) plans one list, as before the diet: the
// first at a path. Planned twice, the second list (keyed by type, so an
// owner reference by its whole content) was rebased too and its body
// overwrote the first's: an owner reference we changed that another writer
// also changed was sent twice, ours and theirs.
func TestAPathNamedTwiceIsOneList(t *testing.T) {
	before := js(`{"metadata":{"name":"x","generation":1,"ownerReferences":[{"uid":"o1","name":"a"}]}}`)
	after := js(`{"metadata":{"name":"x","generation":1,"ownerReferences":[{"uid":"o1","name":"b"}]}}`)
	latest := js(`{"metadata":{"name":"x","generation":1,"ownerReferences":[{"uid":"o1","name":"a","controller":true}]}}`)
	for _, lists := range [][][]string{nil, {{"metadata", "ownerReferences"}}, {{"status", "conditions"}, {"metadata", "ownerReferences"}}} {
		o := Options{ConditionLists: lists}
		parts, err := plan(runtime.DeepCopyJSON(before), &unstructured.Unstructured{Object: after}, o)
		if err != nil || len(parts) != 1 {
			t.Fatalf("%v: plan = %d parts, %v", lists, len(parts), err)
		}
		body, _, _, err := parts[0].body(latest, nil, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		want := js(`{"metadata":{"ownerReferences":[{"uid":"o1","name":"b"}]}}`)
		if !reflect.DeepEqual(body, want) {
			t.Errorf("ConditionLists %v: body %s, want %s", lists, mustJSONOf(body), mustJSONOf(want))
		}
	}
}

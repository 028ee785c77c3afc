package applyset

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/steadyk8s/steady/internal/object"
)

// knownUnchanged reports whether applying obj over live is known to change
// nothing, without asking the API server: live is of obj's apiVersion, every
// field obj sets has that value live, and the field manager's one Apply
// entry owns exactly the fields obj sets, no more (a field dropped from the
// manifest is a removal, hence a change) and no fewer. Any doubt (a list
// merged by key, a value the server normalised, a field shared in another
// way) answers false, and the caller asks the API server by a dry run.
func knownUnchanged(obj, live *unstructured.Unstructured, manager string) bool {
	if live.GetAPIVersion() != obj.GetAPIVersion() {
		return false
	}
	var entry *metav1.ManagedFieldsEntry
	for _, e := range live.GetManagedFields() {
		if e.Manager != manager || e.Subresource != "" {
			continue
		}
		if e.Operation != metav1.ManagedFieldsOperationApply || entry != nil {
			return false // our manager also wrote by update, or twice: doubt
		}
		entry = &e
	}
	if entry == nil || entry.APIVersion != obj.GetAPIVersion() || entry.FieldsV1 == nil || entry.FieldsType != "FieldsV1" {
		return false
	}
	var owned map[string]any
	if err := json.Unmarshal(entry.FieldsV1.Raw, &owned); err != nil {
		return false
	}
	want := obj.DeepCopy().Object
	delete(want, "apiVersion")
	delete(want, "kind")
	if md, ok := want["metadata"].(map[string]any); ok {
		// Identity, not recorded as owned fields.
		delete(md, "name")
		delete(md, "namespace")
		if len(md) == 0 {
			delete(want, "metadata")
		}
	}
	return covers(want, owned, secretView(obj, live))
}

// secretView is live as obj's fields read it. The API server moves a
// Secret's stringData into data (base64-encoded) but records the ownership
// of stringData: live's data is shown back as stringData for the keys obj
// sets there.
func secretView(obj, live *unstructured.Unstructured) map[string]any {
	sd, ok := obj.Object["stringData"].(map[string]any)
	if !ok || obj.GetAPIVersion() != "v1" || obj.GetKind() != "Secret" {
		return live.Object
	}
	data, _ := live.Object["data"].(map[string]any)
	view := map[string]any{}
	for k := range sd {
		enc, ok := data[k].(string)
		if !ok {
			continue
		}
		dec, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			continue
		}
		view[k] = string(dec)
	}
	out := object.CopyMap(live.Object, 1)
	out["stringData"] = view
	return out
}

// covers walks what we set (want), the fields we own (owned, in the FieldsV1
// format: {"f:name": {...}}, "." for the map itself) and the live value
// together.
func covers(want any, owned map[string]any, live any) bool {
	switch w := want.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return false
		}
		n := 0
		for k := range owned {
			if k == "." {
				continue
			}
			if !strings.HasPrefix(k, "f:") {
				return false // a list element: we set a map here
			}
			if _, ok := w[k[2:]]; !ok {
				return false // owned but no longer set: a removal
			}
			n++
		}
		if n != len(w) {
			return false // set but not owned
		}
		for k, v := range w {
			sub, ok := owned["f:"+k].(map[string]any)
			if !ok {
				return false
			}
			lv, ok := l[k]
			if !ok {
				return false
			}
			if !covers(v, sub, lv) {
				return false
			}
		}
		return true
	case []any:
		// Only an atomic list (owned as a whole) is compared; a list merged
		// by key or as a set is left to the dry run.
		if !leaf(owned) {
			return false
		}
		l, ok := live.([]any)
		return ok && len(l) == len(w) && slices.EqualFunc(w, l, sameValue)
	case nil:
		return false
	default:
		return leaf(owned) && sameValue(w, live)
	}
}

// leaf reports whether owned holds no field below it.
func leaf(owned map[string]any) bool {
	for k := range owned {
		if k != "." {
			return false
		}
	}
	return true
}

// sameValue compares JSON values (as decoded: integers are int64), integers
// and floats by value: two integers exactly (float64 would take 2^53+1 for
// 2^53), an integer and a float only when the float is that very integer.
func sameValue(a, b any) bool {
	ia, aInt := a.(int64)
	ib, bInt := b.(int64)
	fa, aFloat := a.(float64)
	fb, bFloat := b.(float64)
	switch {
	case aInt && bInt:
		return ia == ib
	case aInt && bFloat:
		return object.SameNumber(ia, fb)
	case aFloat && bInt:
		return object.SameNumber(ib, fa)
	case aFloat && bFloat:
		return fa == fb
	case aInt || bInt || aFloat || bFloat:
		return false
	}
	if reflect.TypeOf(a) != reflect.TypeOf(b) {
		return false
	}
	return equality.Semantic.DeepEqual(a, b)
}

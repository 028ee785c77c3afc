package object

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// NormalizeJSON makes the content of an unstructured obj JSON-typed, as
// the API server's answers are (int64, float64, string, bool, nil,
// map[string]any, []any), when code wrote other Go values into it (an int,
// a []string, a map[string]string): what the JSON encoder accepts, but
// runtime.DeepCopyJSON, and so [ToMap], panics on. Other objects are left
// alone.
func NormalizeJSON(obj runtime.Object) error {
	u, ok := obj.(runtime.Unstructured)
	if !ok || isJSON(u.UnstructuredContent()) {
		return nil
	}
	m, err := jsonCopy(u.UnstructuredContent())
	if err != nil {
		return err
	}
	u.SetUnstructuredContent(m)
	return nil
}

// jsonCopy copies m through JSON, so that the copy holds only JSON types.
func jsonCopy(m map[string]any) (map[string]any, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("the unstructured content is not JSON: %w", err)
	}
	out := map[string]any{}
	if err := utiljson.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("the unstructured content is not JSON: %w", err)
	}
	return out, nil
}

func isJSON(v any) bool {
	switch v := v.(type) {
	case nil, string, int64, float64, bool:
		return true
	case map[string]any:
		for _, e := range v {
			if !isJSON(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range v {
			if !isJSON(e) {
				return false
			}
		}
		return true
	}
	return false
}

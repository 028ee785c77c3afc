package applyset

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// jsonCopy copies u, whose values an operator may have written in Go (int,
// int32, uint, float32 in a map literal), into the JSON types that the API
// machinery takes (int64, float64): unstructured's DeepCopy panics on the
// others. A value of no JSON type is refused, by its field path.
func jsonCopy(u *unstructured.Unstructured) (*unstructured.Unstructured, *fieldError) {
	v, fe := jsonValue(u.Object, "")
	if fe != nil {
		return nil, fe
	}
	return &unstructured.Unstructured{Object: v.(map[string]any)}, nil
}

func jsonValue(v any, path string) (any, *fieldError) {
	sub := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch x := v.(type) {
	case nil, string, bool, int64, float64:
		return x, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, fe := jsonValue(e, sub(k))
			if fe != nil {
				return nil, fe
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, fe := jsonValue(e, fmt.Sprintf("%s[%d]", path, i))
			if fe != nil {
				return nil, fe
			}
			out[i] = c
		}
		return out, nil
	case int:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case uint8:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint:
		if uint64(x) <= math.MaxInt64 {
			return int64(x), nil
		}
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), nil
		}
	case float32:
		return float64(x), nil
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i, nil
		}
		if f, err := x.Float64(); err == nil {
			return f, nil
		}
	}
	return nil, &fieldError{path, fmt.Errorf("%v (%T) is not a JSON value", v, v)}
}

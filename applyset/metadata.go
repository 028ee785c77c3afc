package applyset

import (
	"errors"
	"fmt"

	"github.com/steadyk8s/steady/internal/object"
)

// checkObject checks what unstructured's accessors would otherwise silently
// drop: apiVersion and kind are strings, metadata is an object whose name is
// set and whose string fields, labels, annotations and finalizers hold
// strings only (the API server refuses anything else; GetLabels would read
// a label "tier: 2" as no labels at all).
func checkObject(m map[string]any) *object.PathError {
	for _, f := range []string{"apiVersion", "kind"} {
		if s, ok := m[f].(string); !ok || s == "" {
			return &object.PathError{Path: f, Err: errors.New("missing or not a string")}
		}
	}
	md, ok := m["metadata"].(map[string]any)
	if !ok {
		return &object.PathError{Path: "metadata", Err: errors.New("missing or not an object")}
	}
	for _, f := range []string{"name", "namespace", "generateName", "uid", "resourceVersion"} {
		if v, ok := md[f]; ok && v != nil {
			if _, ok := v.(string); !ok {
				return &object.PathError{Path: "metadata." + f, Err: fmt.Errorf("%v is not a string", v)}
			}
		}
	}
	if s, _ := md["name"].(string); s == "" {
		return &object.PathError{Path: "metadata.name", Err: errors.New("missing")}
	}
	for _, f := range []string{"labels", "annotations"} {
		v, ok := md[f]
		if !ok || v == nil {
			continue
		}
		mm, ok := v.(map[string]any)
		if !ok {
			return &object.PathError{Path: "metadata." + f, Err: errors.New("not an object")}
		}
		for k, v := range mm {
			if _, ok := v.(string); !ok {
				return &object.PathError{Path: "metadata." + f + "." + k, Err: fmt.Errorf("%v is not a string (quote it)", v)}
			}
		}
	}
	if v, ok := md["finalizers"]; ok && v != nil {
		l, ok := v.([]any)
		if !ok {
			return &object.PathError{Path: "metadata.finalizers", Err: errors.New("not a list")}
		}
		for i, f := range l {
			if _, ok := f.(string); !ok {
				return &object.PathError{Path: fmt.Sprintf("metadata.finalizers[%d]", i), Err: fmt.Errorf("%v is not a string", f)}
			}
		}
	}
	return nil
}

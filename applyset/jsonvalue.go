package applyset

import (
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/steadyk8s/steady/internal/object"
)

// toJSONTypes copies u, whose values an operator may have written in Go (int,
// int32, uint, float32, []string in a map literal), into the JSON types that
// the API machinery takes (int64, float64, []any): unstructured's DeepCopy
// panics on the others. A value of no JSON type is refused, by its field
// path.
func toJSONTypes(u *unstructured.Unstructured) (*unstructured.Unstructured, *object.PathError) {
	m, err := object.ToJSONTypes(u.Object)
	if pe := (*object.PathError)(nil); errors.As(err, &pe) {
		return nil, pe
	} else if err != nil {
		return nil, &object.PathError{Err: err}
	}
	return &unstructured.Unstructured{Object: m}, nil
}

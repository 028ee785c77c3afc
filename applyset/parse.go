package applyset

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// ParseYAML decodes a multi-document YAML (or JSON) stream into objects. A
// document that is not a Kubernetes object, or lacks apiVersion, kind or
// metadata.name, is a [*ParseError] naming its index and field. Empty
// documents and List kinds' items are handled.
func ParseYAML(data []byte) ([]*unstructured.Unstructured, error) {
	return parse("input", data)
}

// ReadFS reads every .yaml, .yml and .json file of fsys that matches pattern
// (path.Match syntax, "*.yaml" say), in name order.
func ReadFS(fsys fs.FS, pattern string) ([]*unstructured.Unstructured, error) {
	names, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, fmt.Errorf("applyset: %w", err)
	}
	sort.Strings(names)
	var out []*unstructured.Unstructured
	for _, n := range names {
		switch path.Ext(n) {
		case ".yaml", ".yml", ".json":
		default:
			continue
		}
		data, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, fmt.Errorf("applyset: %w", err)
		}
		objs, err := parse(n, data)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

func parse(source string, data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for i := 0; ; i++ {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, &ParseError{Source: source, Document: i, Err: err}
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		fail := func(field, msg string) error {
			return &ParseError{Source: source, Document: i, Field: field, Err: errors.New(msg)}
		}
		for _, f := range []string{"apiVersion", "kind"} {
			if s, ok := m[f].(string); !ok || s == "" {
				return nil, fail(f, "missing or not a string")
			}
		}
		if _, ok := m["metadata"].(map[string]any); !ok && !u.IsList() {
			return nil, fail("metadata", "missing or not an object")
		}
		if u.IsList() {
			err := u.EachListItem(func(o runtime.Object) error {
				item, ok := o.(*unstructured.Unstructured)
				if !ok || item.GetName() == "" {
					return fail("items", "an item has no metadata.name")
				}
				out = append(out, item)
				return nil
			})
			if err != nil {
				return nil, err
			}
			continue
		}
		if u.GetName() == "" {
			return nil, fail("metadata.name", "missing")
		}
		out = append(out, u)
	}
}

package applyset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/steadyk8s/steady/internal/object"
)

// ParseYAML decodes a multi-document YAML (or JSON) stream into objects.
// Empty documents are skipped and the items of a List kind are returned as
// objects. A document, or an item of a List, that is not a Kubernetes
// object is a [*ParseError] naming its index and field: apiVersion, kind or
// metadata.name missing, or metadata holding a value the API server would
// refuse (a label "tier: 2" must be quoted).
func ParseYAML(data []byte) ([]*unstructured.Unstructured, error) {
	return parse("input", data)
}

// ReadFS reads every .yaml, .yml and .json file of fsys that matches pattern
// (path.Match syntax, "*.yaml" say), in name order, as [ParseYAML] does.
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
		// Raw JSON first, then numbers as int64 where they are integers
		// (as the API machinery reads them): a float64 would round
		// integers above 2^53 and make replicas: 3 a float.
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, &ParseError{Source: source, Document: i, Err: err}
		}
		var m map[string]any
		if err := utiljson.Unmarshal(raw, &m); err != nil {
			return nil, &ParseError{Source: source, Document: i, Err: err}
		}
		if len(m) == 0 {
			continue
		}
		fail := func(prefix string, pe *object.PathError) error {
			return &ParseError{Source: source, Document: i, Field: prefix + pe.Path, Err: pe.Err}
		}
		items, isList := m["items"].([]any)
		if !isList {
			if pe := checkObject(m); pe != nil {
				return nil, fail("", pe)
			}
			out = append(out, &unstructured.Unstructured{Object: m})
			continue
		}
		for _, f := range []string{"apiVersion", "kind"} {
			if s, ok := m[f].(string); !ok || s == "" {
				return nil, &ParseError{Source: source, Document: i, Field: f, Err: errors.New("missing or not a string")}
			}
		}
		for j, it := range items {
			prefix := fmt.Sprintf("items[%d].", j)
			item, ok := it.(map[string]any)
			if !ok {
				return nil, &ParseError{Source: source, Document: i, Field: fmt.Sprintf("items[%d]", j), Err: fmt.Errorf("%v is not an object", it)}
			}
			if pe := checkObject(item); pe != nil {
				return nil, fail(prefix, pe)
			}
			out = append(out, &unstructured.Unstructured{Object: item})
		}
	}
}

package applyset_test

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/steadyk8s/steady/applyset"
)

// FuzzParseYAML: ParseYAML never panics, every error is a *ParseError, and
// every object it returns has a name and reads back all its labels and
// annotations (none silently dropped by a non-string value).
func FuzzParseYAML(f *testing.F) {
	for _, seed := range []string{
		cm("a"),
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {tier: 2}}\n",
		"apiVersion: v1\nkind: List\nitems: [3]\n",
		"apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: ConfigMap, metadata: {name: x, annotations: {a: null}}}]\n",
		"kind: ConfigMap\nmetadata: {name: x}\n",
		"{}\n---\n[]\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, finalizers: [x, 1]}\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		objs, err := applyset.ParseYAML([]byte(in))
		if err != nil {
			var pe *applyset.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not a *ParseError", err, err)
			}
			return
		}
		for _, o := range objs {
			if o.GetName() == "" || o.GetKind() == "" || o.GetAPIVersion() == "" {
				t.Fatalf("object without identity: %v", o.Object)
			}
			for _, f := range []string{"labels", "annotations"} {
				raw, _, _ := unstructured.NestedFieldNoCopy(o.Object, "metadata", f)
				m, _ := raw.(map[string]any)
				got := o.GetLabels()
				if f == "annotations" {
					got = o.GetAnnotations()
				}
				if len(got) != len(m) {
					t.Fatalf("%s %v read back as %v", f, m, got)
				}
			}
		}
	})
}

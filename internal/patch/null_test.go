package patch

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// sent patches before with obj through a client that records each patch
// body and answers with nothing, and returns the bodies.
func sent(t *testing.T, before, obj client.Object, o Options) []string {
	t.Helper()
	var bodies []string
	record := func(p client.Patch) error {
		data, err := p.Data(nil)
		if err != nil {
			return err
		}
		bodies = append(bodies, string(data))
		return nil
	}
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(runtime.NewScheme()).Build(), interceptor.Funcs{
		Patch: func(_ context.Context, _ client.WithWatch, _ client.Object, p client.Patch, _ ...client.PatchOption) error {
			return record(p)
		},
		SubResourcePatch: func(_ context.Context, _ client.Client, _ string, _ client.Object, p client.Patch, _ ...client.SubResourcePatchOption) error {
			return record(p)
		},
	})
	w := Writer{Client: c}
	if _, err := w.Patch(context.Background(), before, obj, o); err != nil {
		t.Fatal(err)
	}
	return bodies
}

// TestPatchSendsNilSliceAndMapAsNull: an unstructured object whose code set
// a list or a map to a Go nil ([]any(nil), map[string]any(nil): JSON null,
// as json.Marshal has them) has the field removed, as before MergeDiff (the
// JSON merge patch of the encoded objects): not an empty list or map sent
// in its place, with another change beside it or alone.
func TestPatchSendsNilSliceAndMapAsNull(t *testing.T) {
	snapshot := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "steady.dev/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w", "namespace": "ns", "resourceVersion": "7", "generation": int64(1)},
			"spec": map[string]any{
				"items":    []any{"a"},
				"empty":    []any{},
				"selector": map[string]any{"a": "x"},
				"size":     int64(1),
			},
		}}
	}
	for _, tc := range []struct {
		name   string
		change func(spec map[string]any)
		want   string
	}{
		{"a list set to a nil slice", func(s map[string]any) { s["items"] = []any(nil) },
			`{"spec":{"items":null}}`},
		{"a map set to a nil map", func(s map[string]any) { s["selector"] = map[string]any(nil) },
			`{"metadata":{"resourceVersion":"7"},"spec":{"selector":null}}`},
		{"an empty list set to a nil slice, beside another change", func(s map[string]any) { s["empty"] = []any(nil); s["size"] = int64(2) },
			`{"spec":{"empty":null,"size":2}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot()
			obj := snapshot()
			tc.change(obj.Object["spec"].(map[string]any))
			got := sent(t, before, obj, Options{})
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("sent %q, want [%s]", got, tc.want)
			}
		})
	}
}

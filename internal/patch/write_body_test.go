package patch

import (
	"context"
	"errors"
	"math"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadyk8s/steady/internal/object"
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
	w := Writer{Client: recording(record)}
	if _, err := w.Patch(context.Background(), before, obj, o); err != nil {
		t.Fatal(err)
	}
	return bodies
}

// recording is a client whose patches (of the object and of its status)
// go to record, and are answered with nothing.
func recording(record func(client.Patch) error) client.Client {
	return interceptor.NewClient(fake.NewClientBuilder().WithScheme(runtime.NewScheme()).Build(), interceptor.Funcs{
		Patch: func(_ context.Context, _ client.WithWatch, _ client.Object, p client.Patch, _ ...client.PatchOption) error {
			return record(p)
		},
		SubResourcePatch: func(_ context.Context, _ client.Client, _ string, _ client.Object, p client.Patch, _ ...client.SubResourcePatchOption) error {
			return record(p)
		},
	})
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

// TestNotJSONWritesNothing: an object holding a value JSON cannot encode
// (a NaN a division by zero left in a float field) is refused before any
// write, as when both objects were encoded whole: not half written (status,
// then the error on the rest).
func TestNotJSONWritesNothing(t *testing.T) {
	writes := 0
	c := recording(func(client.Patch) error { writes++; return nil })
	snapshot := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "steady.dev/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w", "namespace": "ns", "resourceVersion": "7"},
			"spec":     map[string]any{"ratio": 0.5},
			"status":   map[string]any{"phase": "A"},
		}}
	}
	before, obj := snapshot(), snapshot()
	obj.Object["spec"].(map[string]any)["ratio"] = math.NaN()
	obj.Object["status"].(map[string]any)["phase"] = "B"
	w := Writer{Client: c}
	res, err := w.Patch(context.Background(), before, obj, Options{})
	var pe *object.PathError
	if !errors.As(err, &pe) || pe.Path != "spec.ratio" || writes != 0 || len(res.Wrote) != 0 {
		t.Errorf("error %v, %d writes (wrote %v); want a *object.PathError naming spec.ratio and no write", err, writes, res.Wrote)
	}
}

// TestPatchSameEncodedStringWritesNothing: a string of bytes that are not
// UTF-8, which the JSON encoder writes as U+FFFD each, where the object
// holds those U+FFFD (the API server's answer to the last write of it):
// no change, no request on every reconcile.
func TestPatchSameEncodedStringWritesNothing(t *testing.T) {
	before := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "steady.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "ns", "resourceVersion": "7",
			"annotations": map[string]any{"raw": "a\ufffdb"}},
		"spec": map[string]any{"note": "\ufffd"},
	}}
	obj := before.DeepCopy()
	obj.Object["metadata"].(map[string]any)["annotations"] = map[string]any{"raw": "a\xffb"}
	obj.Object["spec"] = map[string]any{"note": "\xfe"}
	if got := sent(t, before, obj, Options{}); len(got) != 0 {
		t.Errorf("sent %q, want nothing", got)
	}
}

package patch

import (
	"context"
	"maps"
	"math/rand/v2"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadyk8s/steady/internal/object"
	"github.com/steadyk8s/steady/internal/testapi"
)

// Patch only reads its snapshot, and so every map and slice the snapshot
// shares with the object as changed (finalizer.Handler snapshots an object
// it only adds finalizers to as such a shallow copy): through a conflict,
// the re-read, the rebase, the write and obj taking the answer, the
// snapshot stays as it was, typed or unstructured, over random changes.
func TestPatchOnlyReadsTheSnapshot(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := testapi.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		live := randomWidget(rng)
		live.ResourceVersion = ""
		c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(live).WithStatusSubresource(live).Build()
		read := &testapi.Widget{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(live), read); err != nil {
			t.Fatal(err)
		}
		// Another writer changes the object after our read: our first
		// write conflicts where it is locked, and is rebased.
		other := read.DeepCopy()
		other.Labels = map[string]string{"theirs": "x"}
		other.Finalizers = append(other.Finalizers, "theirs.dev/f")
		if err := c.Update(context.Background(), other); err != nil {
			t.Fatal(err)
		}
		conflicted := false
		w := Writer{Client: interceptor.NewClient(c, interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				if !conflicted {
					conflicted = true
					return apierrors.NewConflict(schema.GroupResource{Resource: "widgets"}, obj.GetName(), nil)
				}
				return c.SubResource(sub).Patch(ctx, obj, p, opts...)
			},
		})}

		var before, obj client.Object
		if rng.IntN(2) == 0 {
			b := read
			o := object.Shallow(b)
			change(rng, o)
			o.Finalizers = append(o.Finalizers, "ours.dev/added")
			before, obj = b, o
		} else {
			m, err := object.ToMap(read)
			if err != nil {
				t.Fatal(err)
			}
			// managedFields, which the conversion leaves out.
			m["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": "m", "operation": "Update"}}
			b := &unstructured.Unstructured{Object: m}
			b.SetGroupVersionKind(testapi.GroupVersion.WithKind("Widget"))
			o := object.Shallow(b)
			o.Object["metadata"] = maps.Clone(o.Object["metadata"].(map[string]any))
			o.SetFinalizers(append(o.GetFinalizers(), "ours.dev/added"))
			if rng.IntN(2) == 0 {
				o.Object["status"] = map[string]any{"phase": "Changed"}
			}
			before, obj = b, o
		}
		want := before.DeepCopyObject()
		if _, err := w.Patch(context.Background(), before, obj, Options{ObservedGeneration: rng.IntN(2) == 0}); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !reflect.DeepEqual(before, want) {
			t.Fatalf("seed %d: Patch changed its snapshot:\n%+v\nwas\n%+v", seed, before, want)
		}
		got := &testapi.Widget{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(live), got); err != nil {
			t.Fatal(err)
		}
		if !contains(got.Finalizers, "ours.dev/added") || !contains(got.Finalizers, "theirs.dev/f") {
			t.Fatalf("seed %d: finalizers %v, want ours and theirs", seed, got.Finalizers)
		}
	}
}

func contains(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

package finalizer_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadyk8s/steady/finalizer"
	"github.com/steadyk8s/steady/internal/testapi"
)

// Handle snapshots an object it only adds finalizers to as a shallow copy
// of it. Through a conflict (another writer adds a finalizer and changes a
// label between our read and our write), the maps the object held (labels,
// annotations, status; an unstructured object's spec) are never
// written through, the stored object keeps both writers' finalizers, and
// obj holds it; where the write fails, obj is as read again, sharing
// nothing with what Handle changed.
func TestAddingFinalizersThroughAConflictLeavesTheObjectsMapsWhole(t *testing.T) {
	env.Require(t)
	_, _, _, c, ns := setup(t)
	for _, shape := range []string{"typed", "unstructured"} {
		for _, fail := range []bool{false, true} {
			name := shape + map[bool]string{false: "", true: "-failing"}[fail]
			t.Run(name, func(t *testing.T) {
				w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: []string{otherFinalizer},
					Labels: map[string]string{"a": "1"}, Annotations: map[string]string{"n": "1"}}}
				if err := c.Create(context.Background(), w); err != nil {
					t.Fatal(err)
				}
				w.Status.Phase = "Ready"
				if err := c.Status().Update(context.Background(), w); err != nil {
					t.Fatal(err)
				}
				patches := 0
				wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
				if err != nil {
					t.Fatal(err)
				}
				ic := interceptor.NewClient(wc, interceptor.Funcs{
					Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
						patches++
						if patches == 1 { // another writer, between our read and our write
							var theirs testapi.Widget
							if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), &theirs); err != nil {
								return err
							}
							theirs.Finalizers = append(theirs.Finalizers, "theirs.example.com/f")
							theirs.Labels["theirs"] = "x"
							if err := cl.Update(ctx, &theirs); err != nil {
								return err
							}
						}
						if fail {
							return apierrors.NewInternalError(errors.New("injected"))
						}
						return cl.Patch(ctx, obj, p, opts...)
					},
				})
				h := finalizer.NewHandler(ic)
				for _, n := range []string{bucketFinalizer, dnsFinalizer} {
					if err := h.Register(n, finalizer.Func(func(context.Context, client.Object) error { return nil })); err != nil {
						t.Fatal(err)
					}
				}
				var obj client.Object
				var held any // the maps the object holds (but the finalizers, which Handle adds to obj) (but the finalizers, which Handle adds to)
				switch shape {
				case "typed":
					read := &testapi.Widget{}
					if err := c.Get(context.Background(), client.ObjectKeyFromObject(w), read); err != nil {
						t.Fatal(err)
					}
					read.Finalizers = slices.Grow(read.Finalizers, 4)
					obj, held = read, []any{read.Labels, read.Annotations}
				default:
					read := &unstructured.Unstructured{}
					read.SetGroupVersionKind(testapi.GroupVersion.WithKind("Widget"))
					if err := c.Get(context.Background(), client.ObjectKeyFromObject(w), read); err != nil {
						t.Fatal(err)
					}
					md := read.Object["metadata"].(map[string]any)
					held = map[string]any{"labels": md["labels"], "annotations": md["annotations"], "status": read.Object["status"], "spec": read.Object["spec"]}
					obj = read
				}
				asRead := obj.DeepCopyObject()
				wantHeld := deepCopyAny(held)
				_, err = h.Handle(context.Background(), obj)
				if !reflect.DeepEqual(held, wantHeld) {
					t.Fatalf("Handle wrote through the object's maps:\n%v\nwere\n%v", held, wantHeld)
				}
				if fail {
					if err == nil {
						t.Fatal("Handle succeeded through a failing write")
					}
					if !reflect.DeepEqual(obj, asRead) {
						t.Fatalf("after the failed write obj is\n%+v\nnot as read\n%+v", obj, asRead)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				got, _ := stored(t, c, w)
				want := []string{otherFinalizer, "theirs.example.com/f", bucketFinalizer, dnsFinalizer}
				if !slices.Equal(got.Finalizers, want) || got.Labels["theirs"] != "x" || got.Labels["a"] != "1" || got.Status.Phase != "Ready" {
					t.Errorf("stored finalizers %v, labels %v, phase %q; want %v, both labels, Ready", got.Finalizers, got.Labels, got.Status.Phase, want)
				}
				if !slices.Equal(obj.GetFinalizers(), want) || obj.GetResourceVersion() != got.ResourceVersion {
					t.Errorf("obj holds finalizers %v at %s, not the stored %v at %s", obj.GetFinalizers(), obj.GetResourceVersion(), want, got.ResourceVersion)
				}
			})
		}
	}
}

// deepCopyAny copies the maps of an object that a test holds.
func deepCopyAny(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return runtime.DeepCopyJSON(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			switch e := e.(type) {
			case map[string]string:
				c := make(map[string]string, len(e))
				for k, x := range e {
					c[k] = x
				}
				out[i] = c
			}
		}
		return out
	}
	return v
}

package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	benchv1 "github.com/steadyk8s/steady/bench/api/v1alpha1"
)

// stubClient answers at once: a Team never written is a new Team of that
// name (its own UID, generation 1, no finalizer, no status), any other
// object never written NotFound; a write is accepted with the next
// resourceVersion and kept (a patch applied to the kept object, as the API
// server does), and answered with what was kept. Through it a converging
// reconcile costs what the variant's own code costs, without the client's
// HTTP, encoding and decoding, which both variants pay alike. The time
// spent in the stub itself (applying patches, copying) is added to *stub.
func stubClient(tb testing.TB, stub *time.Duration) client.Client {
	tb.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		tb.Fatal(err)
	}
	if err := benchv1.AddToScheme(s); err != nil {
		tb.Fatal(err)
	}
	type key struct {
		t reflect.Type
		client.ObjectKey
	}
	kept := map[key]client.Object{}
	rv := 1000
	keep := func(obj client.Object) {
		rv++
		obj.SetResourceVersion(strconv.Itoa(rv))
		kept[key{reflect.TypeOf(obj), client.ObjectKeyFromObject(obj)}] = obj.DeepCopyObject().(client.Object)
	}
	answer := func(k client.ObjectKey, obj client.Object) bool {
		o, ok := kept[key{reflect.TypeOf(obj), k}]
		if ok {
			reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(o.DeepCopyObject()).Elem())
		}
		return ok
	}
	timed := func(f func() error) error {
		t0 := time.Now()
		err := f()
		*stub += time.Since(t0)
		return err
	}
	patch := func(obj client.Object, p client.Patch) error {
		return timed(func() error {
			old, ok := kept[key{reflect.TypeOf(obj), client.ObjectKeyFromObject(obj)}]
			if !ok {
				return apierrors.NewNotFound(schema.GroupResource{}, obj.GetName())
			}
			data, err := p.Data(obj)
			if err != nil {
				return err
			}
			js, err := json.Marshal(old)
			if err != nil {
				return err
			}
			if js, err = jsonpatch.MergePatch(js, data); err != nil {
				return err
			}
			fresh := old.DeepCopyObject().(client.Object)
			reflect.ValueOf(fresh).Elem().SetZero()
			if err := json.Unmarshal(js, fresh); err != nil {
				return err
			}
			keep(fresh)
			reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(fresh).Elem())
			return nil
		})
	}
	return interceptor.NewClient(fake.NewClientBuilder().WithScheme(s).WithRESTMapper(&pointerMapper{testrestmapper.TestOnlyStaticRESTMapper(s)}).Build(), interceptor.Funcs{
		Get: func(_ context.Context, _ client.WithWatch, k client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
			return timed(func() error {
				if answer(k, obj) {
					return nil
				}
				t, ok := obj.(*benchv1.Team)
				if !ok {
					return apierrors.NewNotFound(schema.GroupResource{}, k.Name)
				}
				*t = benchv1.Team{
					TypeMeta: metav1.TypeMeta{APIVersion: benchv1.GroupVersion.String(), Kind: "Team"},
					ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name, UID: types.UID("uid-" + k.Name),
						ResourceVersion: "1", Generation: 1, CreationTimestamp: metav1.Unix(1, 0)},
					Spec: benchv1.TeamSpec{Members: []string{"alice", "bob"}},
				}
				kept[key{reflect.TypeOf(obj), k}] = t.DeepCopy()
				return nil
			})
		},
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			return timed(func() error {
				obj.SetUID(types.UID("uid-child-" + obj.GetName()))
				obj.SetCreationTimestamp(metav1.Unix(2, 0))
				keep(obj)
				return nil
			})
		},
		Update: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.UpdateOption) error {
			return timed(func() error { keep(obj); return nil })
		},
		Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, p client.Patch, _ ...client.PatchOption) error {
			return patch(obj, p)
		},
		SubResourceUpdate: func(_ context.Context, _ client.Client, _ string, obj client.Object, _ ...client.SubResourceUpdateOption) error {
			return timed(func() error { keep(obj); return nil })
		},
		SubResourcePatch: func(_ context.Context, _ client.Client, _ string, obj client.Object, p client.Patch, _ ...client.SubResourcePatchOption) error {
			return patch(obj, p)
		},
	})
}

// pointerMapper is a REST mapper held by a pointer, as a manager's is.
// The static test mapper is a slice, which has no identity, and the
// helpers key what they learn of a cluster (such as which kinds are
// namespaced) by its mapper's: through the bare test mapper they would
// learn nothing and ask the mapper again on every call, which no real
// client does.
type pointerMapper struct{ meta.RESTMapper }

// BenchmarkConvergeOverhead converges a new Team, one reconcile, through
// stubClient: the variant's own work (steady's patch engine, references
// and checks; controllerutil's), with the requests answered at once. It is
// the part of a converging reconcile the variants do not share; the
// harness's ConvergeReconcile measures the whole. -cpuprofile shows it
// without the client's frames.
func BenchmarkConvergeOverhead(b *testing.B) {
	for _, v := range []string{Steady, HandWritten} {
		b.Run(v, func(b *testing.B) {
			var stub time.Duration
			c := stubClient(b, &stub)
			var rec crreconcile.Reconciler
			switch v {
			case Steady:
				r, err := newSteady(c, c)
				if err != nil {
					b.Fatal(err)
				}
				rec = r
			case HandWritten:
				rec = &handWrittenReconciler{client: c, scheme: c.Scheme()}
			}
			ctx := context.Background()
			n := 0
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				n++
				req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "bench", Name: fmt.Sprintf("team-%07d", n)}}
				if res, err := rec.Reconcile(ctx, req); err != nil || res != (ctrl.Result{}) {
					b.Fatalf("reconcile %d: %+v, %v", n, res, err)
				}
			}
			// The variant's own time: the loop's, less the stub's.
			b.ReportMetric(float64((time.Since(start)-stub).Nanoseconds())/float64(n), "own-ns/op")
		})
	}
}

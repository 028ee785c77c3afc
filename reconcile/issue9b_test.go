package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadyk8s/steady/cachewait"
	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/finalizer"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// Item 8: a kind without a status subresource: repeated no-op reconciles
// with WithObservedGeneration make no write, and the generation stays.
func TestObservedGenerationWithoutStatusSubresource(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	u := createU(t, newUnstructured("PlainThing", env.Namespace(t), "p"))
	c, n, _ := testapi.NewCountingClient(env.Config, env.Scheme)
	reconcileOnce := func() {
		obj := getU(t, u)
		p, _ := reconcile.NewPatcher(c, obj)
		_ = unstructured.SetNestedField(obj.Object, "Running", "status", "phase")
		if err := p.Patch(ctx, obj, reconcile.WithObservedGeneration{}); err != nil {
			t.Fatal(err)
		}
	}
	reconcileOnce()
	first := getU(t, u)
	og, _, _ := unstructured.NestedInt64(first.Object, "status", "observedGeneration")
	if og != first.GetGeneration() {
		t.Errorf("after the first write: generation %d, observedGeneration %d", first.GetGeneration(), og)
	}
	n.Reset()
	for range 5 {
		reconcileOnce()
	}
	last := getU(t, u)
	if n.Writes() != 0 || last.GetGeneration() != first.GetGeneration() {
		t.Errorf("5 no-op reconciles: requests %s, generation %d -> %d", n, first.GetGeneration(), last.GetGeneration())
	}
}

// API: a Patcher used twice, with optimistic locking, does not conflict
// with its own first write.
func TestPatcherIsReusable(t *testing.T) {
	env.Require(t)
	w, c, n := fixture(t)
	ctx := context.Background()
	p, _ := reconcile.NewPatcher(c, w)
	conditions.MarkTrue(w, "Reconciling", "Started", "")
	if err := p.Patch(ctx, w, reconcile.WithOptimisticLock{}); err != nil {
		t.Fatal(err)
	}
	conditions.Delete(w, "Reconciling")
	conditions.MarkTrue(w, "Ready", "Done", "")
	w.Spec.Size = 7
	if err := p.Patch(ctx, w, reconcile.WithOptimisticLock{}); err != nil {
		t.Fatalf("second Patch = %v", err)
	}
	got := get(t, w)
	if conditions.Has(got, "Reconciling") || !conditions.IsTrue(got, "Ready") || got.Spec.Size != 7 {
		t.Errorf("object = %+v", got)
	}
	if n.Get("PATCH") != 3 || n.Get("GET") != 0 {
		t.Errorf("requests %s, want 3 PATCHes", n)
	}
	n.Reset()
	if err := p.Patch(ctx, w); err != nil || n.Writes() != 0 {
		t.Errorf("third Patch without change: %v, requests %s", err, n)
	}
}

// Faults injected through an interceptor.
func TestFaults(t *testing.T) {
	env.Require(t)
	for _, tc := range []struct {
		name  string
		fault func(n int, patch client.Patch) error // n: 1 for the first PATCH
		check func(t *testing.T, err error, got *testapi.Widget)
	}{
		{"409 on the first attempts converges", func(n int, _ client.Patch) error {
			if n <= 3 {
				return apierrors.NewConflict(schema.GroupResource{Resource: "widgets"}, "w", errors.New("injected"))
			}
			return nil
		}, func(t *testing.T, err error, got *testapi.Widget) {
			if err != nil || got.Spec.Size != 5 || !conditions.IsTrue(got, "Ready") || !slices.Contains(got.Finalizers, "test.steady.dev/mine") {
				t.Errorf("err %v, object %+v", err, got)
			}
		}},
		{"500 on the metadata write says status was written", func(n int, _ client.Patch) error {
			if n == 2 {
				return apierrors.NewInternalError(errors.New("etcd is sad"))
			}
			return nil
		}, func(t *testing.T, err error, got *testapi.Widget) {
			var pe *reconcile.PatchError
			if !errors.As(err, &pe) || !apierrors.IsInternalError(err) || pe.Step != "metadata and spec" ||
				!slices.Equal(pe.Written, []string{"status"}) || pe.Object != "Widget "+got.Namespace+"/w" {
				t.Fatalf("err = %#v", err)
			}
			if !conditions.IsTrue(got, "Ready") || got.Spec.Size != 1 {
				t.Errorf("stored %+v: want status written and spec not", got)
			}
		}},
		{"500 on the status write: nothing written", func(n int, _ client.Patch) error {
			return apierrors.NewInternalError(errors.New("etcd is sad"))
		}, func(t *testing.T, err error, got *testapi.Widget) {
			var pe *reconcile.PatchError
			if !errors.As(err, &pe) || pe.Step != "status" || len(pe.Written) != 0 {
				t.Fatalf("err = %v", err)
			}
			if conditions.Has(got, "Ready") || got.Spec.Size != 1 {
				t.Errorf("stored %+v", got)
			}
		}},
		{"timeout", func(n int, _ client.Patch) error { return context.DeadlineExceeded },
			func(t *testing.T, err error, got *testapi.Widget) {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("err = %v", err)
				}
			}},
		{"NotFound mid-reconcile is gone", func(n int, _ client.Patch) error {
			return apierrors.NewNotFound(schema.GroupResource{Resource: "widgets"}, "w")
		}, func(t *testing.T, err error, got *testapi.Widget) {
			// The status PATCH's NotFound may be a kind without a status
			// subresource: status is written with the object, in one
			// write with the rest, and NotFound again: gone.
			if err != nil {
				t.Errorf("err = %v", err)
			}
		}},
		{"webhook denial", func(n int, _ client.Patch) error {
			return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden,
				Reason: metav1.StatusReasonForbidden, Message: `admission webhook "deny.example.com" denied the request`}}
		}, func(t *testing.T, err error, got *testapi.Widget) {
			if !apierrors.IsForbidden(err) || conditions.Has(got, "Ready") {
				t.Errorf("err = %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, _, _ := fixture(t)
			var calls atomic.Int32
			fault := func(patch client.Patch) error { return tc.fault(int(calls.Add(1)), patch) }
			ww, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
			if err != nil {
				t.Fatal(err)
			}
			c := interceptor.NewClient(ww, interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if err := fault(patch); err != nil {
						return err
					}
					return c.Patch(ctx, obj, patch, opts...)
				},
				SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
					if err := fault(patch); err != nil {
						return err
					}
					return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
				},
			})
			p, _ := reconcile.NewPatcher(c, w)
			conditions.MarkTrue(w, "Ready", "Ok", "")
			w.Spec.Size = 5
			w.Finalizers = append(w.Finalizers, "test.steady.dev/mine")
			err = p.Patch(context.Background(), w)
			tc.check(t, err, get(t, w))
		})
	}
}

// Item 10: through a manager's cached client whose watch lags 300 ms,
// For-based reconciles right after our own write converge without
// conflict errors, and what another writer added meanwhile survives.
func TestForThroughALaggingCache(t *testing.T) {
	env.Require(t)
	for _, withAPIReader := range []bool{true, false} {
		name := "cache only"
		if withAPIReader {
			name = "with API reader"
		}
		t.Run(name, func(t *testing.T) {
			cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 300 * time.Millisecond, Informers: []client.Object{&testapi.Widget{}}})
			ctx := context.Background()
			ns := env.Namespace(t)
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}, Spec: testapi.WidgetSpec{Size: 1}}
			if err := env.Client.Create(ctx, w); err != nil {
				t.Fatal(err)
			}
			var round atomic.Int32
			opts := []reconcile.ForOption{
				reconcile.WithFinalizer("test.steady.dev/mine", finalizer.Func(func(context.Context, client.Object) error { return nil })),
				reconcile.WithObservedGeneration{},
				reconcile.WithReadySummary(conditions.ForConditionTypes{"Synced"}),
			}
			if withAPIReader {
				opts = append(opts, reconcile.WithAPIReader{Reader: cc.APIReader})
			}
			r, err := reconcile.For(cc.Client, func(ctx context.Context, obj *testapi.Widget) (ctrl.Result, error) {
				n := round.Add(1)
				conditions.MarkTrue(obj, "Synced", "Round", "round %d", n)
				obj.Status.Replicas = int(n)
				return ctrl.Result{}, nil
			}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}
			// Wait for the cache to see the object.
			deadline := time.Now().Add(10 * time.Second)
			for cc.Client.Get(ctx, req.NamespacedName, &testapi.Widget{}) != nil && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			for i := range 4 {
				if i == 2 {
					// Another writer, meanwhile: a finalizer, a condition, a label.
					other := get(t, w)
					other.Finalizers = append(other.Finalizers, "other.io/x")
					other.Labels = map[string]string{"their": "label"}
					if err := env.Client.Update(ctx, other); err != nil {
						t.Fatal(err)
					}
					other = get(t, w)
					conditions.MarkTrue(other, "Theirs", "Set", "")
					if err := env.Client.Status().Update(ctx, other); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := r.Reconcile(ctx, req); err != nil {
					t.Fatalf("reconcile %d: %v", i, err)
				}
			}
			got := get(t, w)
			if !slices.Contains(got.Finalizers, "other.io/x") || !slices.Contains(got.Finalizers, "test.steady.dev/mine") ||
				got.Labels["their"] != "label" || !conditions.IsTrue(got, "Theirs") || got.Status.Replicas != 4 ||
				!conditions.IsTrue(got, conditions.Ready) {
				t.Errorf("after 4 reconciles: %+v", got)
			}
			t.Logf("requests: %s", cc.Counter)
		})
	}
}

// Item 14: a cache wait that times out is a requeue, not an error.
func TestForMapsACacheTimeoutToARequeue(t *testing.T) {
	env.Require(t)
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 300 * time.Millisecond, Informers: []client.Object{&testapi.Widget{}}})
	ctx := context.Background()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}, Spec: testapi.WidgetSpec{Size: 1}}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	r, _ := reconcile.For(env.Client, func(ctx context.Context, obj *testapi.Widget) (ctrl.Result, error) {
		obj.Status.Phase = "Changed"
		return ctrl.Result{}, nil
	}, reconcile.WithCacheWait{Reader: cc.Client, Options: []cachewait.WaitOption{cachewait.WithTimeout(time.Millisecond)}})
	res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)})
	if err != nil || res.RequeueAfter != reconcile.CacheTimeoutRequeue {
		t.Errorf("Reconcile = %+v, %v; want a RequeueAfter and no error", res, err)
	}
	if get(t, w).Status.Phase != "Changed" {
		t.Error("the write was lost")
	}
}

// Item 14: For on a stale cached copy of an object that is gone (the
// finalizer handler's write and the Patch find it missing): no error.
func TestForOnAStaleCopyOfAGoneObject(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	stale := get(t, w)
	if err := env.Client.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	ww, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	// A cache that has not seen the deletion yet.
	c := interceptor.NewClient(ww, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			*obj.(*testapi.Widget) = *stale.DeepCopy()
			return nil
		},
	})
	r, _ := reconcile.For(c, func(ctx context.Context, obj *testapi.Widget) (ctrl.Result, error) {
		obj.Status.Phase = "Running"
		return ctrl.Result{}, nil
	},
		reconcile.WithFinalizer("test.steady.dev/mine", finalizer.Func(func(context.Context, client.Object) error { return nil })),
		reconcile.WithAPIReader{Reader: env.Client})
	for i := range 3 {
		if res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}); err != nil {
			t.Fatalf("reconcile %d = %+v, %v; want no error for a gone object", i, res, err)
		}
	}
}

// Item 10, on the Patcher alone: write through a manager's cached client,
// then at once Patch again from the stale cached copy: it succeeds and
// nothing is lost, with and without an API reader.
func TestPatchFromAStaleCachedCopy(t *testing.T) {
	env.Require(t)
	for _, delay := range []time.Duration{100 * time.Millisecond, 300 * time.Millisecond} {
		for _, withAPIReader := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/api reader %v", delay, withAPIReader), func(t *testing.T) {
				cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: delay, Informers: []client.Object{&testapi.Widget{}}})
				ctx := context.Background()
				w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
				if err := env.Client.Create(ctx, w); err != nil {
					t.Fatal(err)
				}
				var opts []reconcile.PatcherOption
				if withAPIReader {
					opts = append(opts, reconcile.WithAPIReader{Reader: cc.APIReader})
				}
				read := func() *testapi.Widget {
					obj := &testapi.Widget{}
					deadline := time.Now().Add(10 * time.Second)
					for cc.Client.Get(ctx, client.ObjectKeyFromObject(w), obj) != nil && time.Now().Before(deadline) {
						time.Sleep(10 * time.Millisecond)
					}
					return obj
				}
				first := read()
				p, _ := reconcile.NewPatcher(cc.Client, first, opts...)
				first.Finalizers = []string{"test.steady.dev/first"}
				conditions.MarkTrue(first, "First", "Done", "")
				if err := p.Patch(ctx, first); err != nil {
					t.Fatal(err)
				}
				stale := read() // the cache has not seen that write yet
				p, _ = reconcile.NewPatcher(cc.Client, stale, opts...)
				stale.Finalizers = append(stale.Finalizers, "test.steady.dev/second")
				conditions.MarkTrue(stale, "Second", "Done", "")
				stale.Status.Phase = "Second"
				if err := p.Patch(ctx, stale); err != nil {
					t.Fatalf("Patch from the stale copy = %v", err)
				}
				got := get(t, w)
				if !slices.Equal(got.Finalizers, []string{"test.steady.dev/first", "test.steady.dev/second"}) ||
					!conditions.IsTrue(got, "First") || !conditions.IsTrue(got, "Second") || got.Status.Phase != "Second" {
					t.Errorf("stored %+v", got)
				}
				t.Logf("requests: %s", cc.Counter)
			})
		}
	}
}

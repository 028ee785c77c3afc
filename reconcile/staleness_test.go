package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/finalizer"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
	"github.com/steadyk8s/steady/testenv"
)

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
				reconcile.WithReadySummary(conditions.SummaryOptions{ConditionTypes: []string{"Synced"}}),
			}
			c := cc.CacheOnly
			if withAPIReader {
				c = cc.Client
			}
			r, err := reconcile.For(c, func(ctx context.Context, obj *testapi.Widget) (ctrl.Result, error) {
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
	r, _ := reconcile.For(reading(c, env.Client), func(ctx context.Context, obj *testapi.Widget) (ctrl.Result, error) {
		obj.Status.Phase = "Running"
		return ctrl.Result{}, nil
	},
		reconcile.WithFinalizer("test.steady.dev/mine", finalizer.Func(func(context.Context, client.Object) error { return nil })))
	for i := range 3 {
		if res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}); err != nil {
			t.Fatalf("reconcile %d = %+v, %v; want no error for a gone object", i, res, err)
		}
	}
}

// The Patcher alone: write through a manager's cached client, then at once
// Patch again from the stale cached copy: that copy is older than our own
// write, so the Patch writes nothing and says so (*StaleError); from a copy
// read once the cache caught up it writes, and nothing is lost, with and
// without an API reader.
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
				c := cc.CacheOnly
				if withAPIReader {
					c = cc.Client
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
				p, _ := reconcile.NewPatcher(c, first)
				first.Finalizers = []string{"test.steady.dev/first"}
				conditions.MarkTrue(first, "First", "Done", "")
				if err := p.Patch(ctx, first); err != nil {
					t.Fatal(err)
				}
				change := func(obj *testapi.Widget) error {
					p, _ := reconcile.NewPatcher(c, obj)
					obj.Finalizers = append(obj.Finalizers, "test.steady.dev/second")
					conditions.MarkTrue(obj, "Second", "Done", "")
					obj.Status.Phase = "Second"
					return p.Patch(ctx, obj)
				}
				stale := read() // the cache has not seen that write yet
				var se *reconcile.StaleError
				if err := change(stale); !errors.As(err, &se) {
					t.Fatalf("Patch from the stale copy = %v, want a *StaleError", err)
				}
				if got := get(t, w); got.ResourceVersion != first.ResourceVersion {
					t.Fatalf("the stale Patch wrote (resourceVersion %s -> %s)", first.ResourceVersion, got.ResourceVersion)
				}
				waitCached(t, cc.Client, w, first.ResourceVersion)
				if err := change(read()); err != nil {
					t.Fatalf("Patch from a current copy = %v", err)
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

// waitCached polls the cache until it holds obj at resourceVersion rv (and
// obj's UID), or fails.
func waitCached(t *testing.T, r client.Reader, obj client.Object, rv string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		got := &testapi.Widget{}
		if r.Get(context.Background(), client.ObjectKeyFromObject(obj), got) == nil &&
			got.UID == obj.GetUID() && got.ResourceVersion == rv {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the cache never held %s at %s", obj.GetName(), rv)
}

// A conflict re-read through a lagging cache can return a state OLDER than
// the snapshot (the snapshot was read from the API server, as NewPatcher
// asks, or is the answer of this Patcher's own last write). That older
// state is as stale as one at the conflicting resourceVersion: rebasing on
// it, a change the older state happens to show is taken as already there
// and silently not written.
func TestRereadOlderThanTheSnapshotIsStale(t *testing.T) {
	env.Require(t)
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 300 * time.Millisecond, Informers: []client.Object{&testapi.Widget{}}})
	ctx := context.Background()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w",
		Finalizers: []string{"test.steady.dev/mine"}}}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	waitCached(t, cc.Client, w, w.ResourceVersion) // the cache: [mine]
	// Someone takes the finalizer off (the cache will not see it for 300 ms).
	w.Finalizers = nil
	if err := env.Client.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	fresh := get(t, w) // as read from the API server: no finalizer
	p, err := reconcile.NewPatcher(cc.Client, fresh)
	if err != nil {
		t.Fatal(err)
	}
	fresh.Finalizers = []string{"test.steady.dev/mine"} // we put it back
	// Another writer meanwhile: the locked write conflicts.
	otherWriterLabels(t, w)
	if err := p.Patch(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	got := get(t, w)
	if !slices.Contains(got.Finalizers, "test.steady.dev/mine") || got.Labels["their"] != "label" {
		t.Errorf("Patch succeeded but stored finalizers %v, labels %v: the finalizer was never written", got.Finalizers, got.Labels)
	}
}

// And through a cache that has not seen the object's creation yet: its
// NotFound after a conflict is the cache lagging; only a write's NotFound
// says gone. Also without status subresource, where the status write's 404
// is followed by a re-read to tell gone from "no subresource".
func TestRereadOfAnObjectTheCacheHasNotSeenIsNotGone(t *testing.T) {
	env.Require(t)
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 300 * time.Millisecond, Informers: []client.Object{&testapi.Widget{}}})
	ctx := context.Background()
	t.Run("conflict", func(t *testing.T) {
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
		if err := env.Client.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		fresh := get(t, w)
		p, _ := reconcile.NewPatcher(cc.Client, fresh)
		conditions.MarkTrue(fresh, "Mine", "Set", "")
		otherWriterLabels(t, w)
		if err := p.Patch(ctx, fresh); err != nil {
			t.Fatal(err)
		}
		if got := get(t, w); !conditions.IsTrue(got, "Mine") {
			t.Errorf("Patch succeeded but stored status %+v: nothing was written", got.Status)
		}
	})
}

// TestPatchOnExitRequeuesQuietly: the cluster-api shape (NewPatcher and a
// deferred PatchOnExit) given the reconcile's result turns a stale
// snapshot, which Patch refuses with nothing written, into a quiet
// requeue, as For does: no error for controller-runtime to log as
// "Reconciler error" and back off on. Without the result (nil), or beside
// an error of the reconcile's own, the *StaleError is returned as before.
func TestPatchOnExitRequeuesQuietly(t *testing.T) {
	env.Require(t)
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 300 * time.Millisecond, Informers: []client.Object{&testapi.Widget{}}})
	ctx := context.Background()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	read := func() *testapi.Widget {
		obj := &testapi.Widget{}
		testenv.Eventually(t, "cached", func() error { return cc.Client.Get(ctx, client.ObjectKeyFromObject(w), obj) })
		return obj
	}
	// reconcile is one Reconcile of the cluster-api shape from obj, with
	// its own error bodyErr; it writes a condition.
	reconcileFrom := func(obj *testapi.Widget, bodyErr error, opts ...reconcile.PatchOption) (res ctrl.Result, reterr error) {
		p, err := reconcile.NewPatcher(cc.Client, obj)
		if err != nil {
			t.Fatal(err)
		}
		defer p.PatchOnExit(ctx, obj, &res, &reterr, opts...)
		conditions.MarkTrue(obj, "Seen", fmt.Sprint("R", time.Now().UnixNano()), "")
		return ctrl.Result{}, bodyErr
	}
	for _, tc := range []struct {
		name      string
		bodyErr   error
		noRequeue bool
	}{{"alone", nil, false}, {"beside the reconcile's error", errors.New("body failed"), false}, {"without the result", nil, true}} {
		t.Run(tc.name, func(t *testing.T) {
			first := read()
			if res, err := reconcileFrom(first, nil); err != nil || res.RequeueAfter != 0 {
				t.Fatalf("the first write: %+v, %v", res, err)
			}
			stale := read() // the cache has not shown that write yet
			if stale.ResourceVersion == first.ResourceVersion {
				t.Skip("the cache caught up before the stale read") // cannot happen with 300 ms of delay
			}
			var res ctrl.Result
			var err error
			if tc.noRequeue {
				p, perr := reconcile.NewPatcher(cc.Client, stale)
				if perr != nil {
					t.Fatal(perr)
				}
				conditions.MarkTrue(stale, "Seen", "Again", "")
				p.PatchOnExit(ctx, stale, nil, &err)
			} else {
				res, err = reconcileFrom(stale, tc.bodyErr)
			}
			var se *reconcile.StaleError
			switch {
			case tc.noRequeue || tc.bodyErr != nil:
				if !errors.As(err, &se) {
					t.Errorf("%+v, %v; want the *StaleError returned", res, err)
				}
			case err != nil || res.RequeueAfter != reconcile.StaleRequeue:
				t.Errorf("%+v, %v; want no error and RequeueAfter %s", res, err, reconcile.StaleRequeue)
			}
			if got := get(t, w); got.ResourceVersion != first.ResourceVersion {
				t.Errorf("the stale Patch wrote (resourceVersion %s -> %s)", first.ResourceVersion, got.ResourceVersion)
			}
			testenv.Eventually(t, "the cache catches up", func() error {
				if got := read(); got.ResourceVersion != first.ResourceVersion {
					return fmt.Errorf("cache at %s, want %s", got.ResourceVersion, first.ResourceVersion)
				}
				return nil
			})
		})
	}
}

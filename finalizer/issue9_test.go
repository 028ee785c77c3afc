package finalizer_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/finalizer"
	"github.com/steadyk8s/steady/internal/testapi"
)

// Item 7: a stale copy of a deleted object whose name now holds a new
// object with the same finalizer: Handle must not strip the new object's
// finalizer (its cleanup never ran).
func TestHandleNeverTouchesARecreatedObject(t *testing.T) {
	env.Require(t)
	h, ext, _, c, ns := setup(t)
	ctx := context.Background()
	w := create(t, c, ns, bucketFinalizer)
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	stale, _ := stored(t, c, w)
	// The old object goes (someone removes the finalizer), a new one comes.
	gone := stale.DeepCopy()
	gone.Finalizers = nil
	if err := env.Client.Update(ctx, gone); err != nil {
		t.Fatal(err)
	}
	fresh := create(t, c, ns, bucketFinalizer)

	res, err := h.Handle(ctx, stale)
	if err != nil || !res.Deleting {
		t.Fatalf("Handle = %+v, %v", res, err)
	}
	got, ok := stored(t, c, w)
	if !ok || got.UID != fresh.UID || !slices.Equal(got.Finalizers, []string{bucketFinalizer}) {
		t.Errorf("the new object lost its finalizer: %+v (exists %v)", got, ok)
	}
	t.Logf("cleanups run: %v (for the old object only)", ext.calls)
}

// Item 14: Handle on a stale copy of an object that is gone: not an error.
func TestHandleOnAGoneObjectIsNotAnError(t *testing.T) {
	env.Require(t)
	h, _, _, c, ns := setup(t)
	ctx := context.Background()
	w := create(t, c, ns)
	stale := w.DeepCopy()
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	res, err := h.Handle(ctx, stale)
	if err != nil || !res.Gone || !res.Deleting {
		t.Errorf("Handle = %+v, %v; want Gone and no error", res, err)
	}
}

// API: a cleanup that reports progress on the object has its change
// written, when in progress, when failing and when done; another writer's
// condition added meanwhile survives.
func TestCleanupChangesAreWritten(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n, _ := testapi.NewCountingClient(env.Config, env.Scheme)
	step := 0
	var stepErr error
	h := finalizer.NewHandler(c)
	_ = h.Register(bucketFinalizer, finalizer.Func(func(ctx context.Context, obj client.Object) error {
		w := obj.(*testapi.Widget)
		step++
		w.Status.Phase = "Deleting"
		conditions.MarkFalse(w, "Ready", "Deleting", "deleting %d of 3 objects", step)
		if step < 3 {
			if stepErr != nil {
				return stepErr
			}
			return finalizer.InProgress(2*time.Second, "%d of 3", step)
		}
		return nil
	}))
	w := create(t, c, env.Namespace(t), bucketFinalizer)
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	w, _ = stored(t, c, w)

	// Step 1: in progress.
	stale := w.DeepCopy()
	other := w.DeepCopy()
	conditions.MarkTrue(other, "Theirs", "Set", "")
	if err := env.Client.Status().Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	n.Reset()
	res, err := h.Handle(ctx, stale)
	if err != nil || !res.Deleting || res.RequeueAfter != 2*time.Second {
		t.Fatalf("Handle = %+v, %v", res, err)
	}
	got, _ := stored(t, c, w)
	if c := conditions.Get(got, "Ready"); c == nil || c.Message != "deleting 1 of 3 objects" || got.Status.Phase != "Deleting" ||
		!conditions.IsTrue(got, "Theirs") || !finalizer.Has(got, bucketFinalizer) {
		t.Fatalf("after step 1: %+v", got)
	}
	t.Logf("in progress: %s", n)

	// Step 2: failing.
	stepErr = errors.New("api down")
	res, err = h.Handle(ctx, got)
	var ce *finalizer.CleanupError
	if !errors.As(err, &ce) {
		t.Fatalf("Handle = %+v, %v", res, err)
	}
	got, _ = stored(t, c, w)
	if c := conditions.Get(got, "Ready"); c == nil || c.Message != "deleting 2 of 3 objects" || !finalizer.Has(got, bucketFinalizer) {
		t.Fatalf("after step 2: %+v", got)
	}

	// Step 3: done, the object goes.
	stepErr = nil
	if res, err = h.Handle(ctx, got); err != nil || !res.Deleting {
		t.Fatalf("Handle = %+v, %v", res, err)
	}
	if _, ok := stored(t, c, w); ok {
		t.Error("object still there")
	}
}

// Item 10: through a manager's cached client with a 300 ms watch lag, a
// Handle right after our own write, on the stale cached copy, succeeds and
// drops nothing.
func TestHandleThroughALaggingCache(t *testing.T) {
	env.Require(t)
	for _, withAPIReader := range []bool{true, false} {
		t.Run(map[bool]string{true: "with API reader", false: "cache only"}[withAPIReader], func(t *testing.T) {
			cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 300 * time.Millisecond, Informers: []client.Object{&testapi.Widget{}}})
			ctx := context.Background()
			var opts []finalizer.HandlerOption
			if withAPIReader {
				opts = append(opts, finalizer.WithAPIReader{Reader: cc.APIReader})
			}
			h := finalizer.NewHandler(cc.Client, opts...)
			_ = h.Register(bucketFinalizer, finalizer.Func(func(context.Context, client.Object) error { return nil }))
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
			if err := env.Client.Create(ctx, w); err != nil {
				t.Fatal(err)
			}
			cached := &testapi.Widget{}
			deadline := time.Now().Add(10 * time.Second)
			for cc.Client.Get(ctx, client.ObjectKeyFromObject(w), cached) != nil && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			// Our own write (another finalizer of ours, say, through a Patch), then
			// Handle on the cached copy that does not have it yet.
			other := cached.DeepCopy()
			other.Finalizers = []string{"other.io/x"}
			if err := cc.Client.Update(ctx, other); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Handle(ctx, cached); err != nil {
				t.Fatalf("Handle on a stale copy = %v", err)
			}
			got, _ := stored(t, env.Client, w)
			if !slices.Equal(got.Finalizers, []string{"other.io/x", bucketFinalizer}) {
				t.Errorf("finalizers = %v", got.Finalizers)
			}
			t.Logf("requests: %s", cc.Counter)
		})
	}
}

// Faults injected on the finalizer writes: 409s converge, a 500 is an error
// naming the object and leaves the finalizers as they were.
func TestHandleFaults(t *testing.T) {
	env.Require(t)
	for _, tc := range []struct {
		name      string
		fault     func(n int) error
		wantErr   bool
		wantFinal []string
	}{
		{"409 on the first attempts converges", func(n int) error {
			if n <= 3 {
				return apierrors.NewConflict(schema.GroupResource{Resource: "widgets"}, "w", errors.New("injected"))
			}
			return nil
		}, false, []string{bucketFinalizer}},
		{"500", func(int) error { return apierrors.NewInternalError(errors.New("etcd is sad")) }, true, nil},
		{"timeout", func(int) error { return context.DeadlineExceeded }, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ww, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			c := interceptor.NewClient(ww, interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					calls++
					if err := tc.fault(calls); err != nil {
						return err
					}
					return c.Patch(ctx, obj, patch, opts...)
				},
			})
			h := finalizer.NewHandler(c)
			_ = h.Register(bucketFinalizer, finalizer.Func(func(context.Context, client.Object) error { return nil }))
			w := create(t, env.Client, env.Namespace(t))
			_, err = h.Handle(context.Background(), w)
			if tc.wantErr != (err != nil) {
				t.Fatalf("Handle = %v", err)
			}
			if err != nil && !strings.Contains(err.Error(), "Widget "+w.Namespace+"/w") {
				t.Errorf("error does not name the object: %v", err)
			}
			got, _ := stored(t, env.Client, w)
			if !slices.Equal(got.Finalizers, tc.wantFinal) {
				t.Errorf("stored finalizers %v, want %v", got.Finalizers, tc.wantFinal)
			}
			if err != nil && !slices.Equal(w.Finalizers, got.Finalizers) {
				t.Errorf("in memory %v, stored %v: the object claims what was not written", w.Finalizers, got.Finalizers)
			}
		})
	}
}

// A stale live copy of an object that is being deleted meanwhile: the API
// server refuses the new finalizer; Handle sees the deletion and runs the
// flow of a deleting object (none of ours is on it: nothing to clean up).
func TestHandleOnAStaleCopyOfADeletingObject(t *testing.T) {
	env.Require(t)
	h, ext, _, c, ns := setup(t)
	ctx := context.Background()
	w := create(t, c, ns, otherFinalizer)
	stale := w.DeepCopy()
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	res, err := h.Handle(ctx, stale)
	if err != nil || !res.Deleting {
		t.Fatalf("Handle = %+v, %v", res, err)
	}
	got, _ := stored(t, c, w)
	if !slices.Equal(got.Finalizers, []string{otherFinalizer}) || len(ext.calls) != 0 {
		t.Errorf("finalizers %v, cleanups %v", got.Finalizers, ext.calls)
	}
}

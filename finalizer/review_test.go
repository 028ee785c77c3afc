package finalizer_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/finalizer"
)

// A cleanup in progress without a time (InProgress(0, ...), "the caller's
// default") must still come back: the documented caller pattern returns
// ctrl.Result{RequeueAfter: res.RequeueAfter} and no error, which with a
// zero RequeueAfter is never requeued, and the object keeps its finalizer
// until some unrelated event.
func TestInProgressWithoutATimeIsRequeued(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		times []time.Duration
		want  time.Duration
	}{
		{"zero", []time.Duration{0}, finalizer.DefaultInProgressRequeue},
		{"zero and a shorter one", []time.Duration{0, time.Second}, time.Second},
		{"a longer one and zero", []time.Duration{time.Hour, 0}, finalizer.DefaultInProgressRequeue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := finalizer.NewHandler(env.Client)
			var names []string
			for i, d := range tc.times {
				name := []string{bucketFinalizer, dnsFinalizer}[i]
				names = append(names, name)
				_ = h.Register(name, finalizer.Func(func(context.Context, client.Object) error {
					return finalizer.InProgress(d, "waiting")
				}))
			}
			w := create(t, env.Client, env.Namespace(t), names...)
			if err := env.Client.Delete(ctx, w); err != nil {
				t.Fatal(err)
			}
			got, _ := stored(t, env.Client, w)
			res, err := h.Handle(ctx, got)
			if err != nil || !res.Deleting || res.RequeueAfter != tc.want {
				t.Errorf("Handle = %+v, %v; want RequeueAfter %s", res, err, tc.want)
			}
			got, _ = stored(t, env.Client, w)
			for _, n := range names {
				if !finalizer.Has(got, n) {
					t.Errorf("finalizer %s removed while its cleanup is in progress", n)
				}
			}
			got.Finalizers = nil
			_ = env.Client.Update(ctx, got)
		})
	}
}

// Several controllers, each with its own Handler and finalizer, handle the
// same deleting object at once from the same stale copy: each cleanup runs,
// no finalizer goes without its cleanup, none survives a succeeded one, and
// the object goes.
func TestConcurrentHandlersOnOneDeletingObject(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	const n = 6
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("c%d.example.com/cleanup", i))
	}
	w := create(t, env.Client, env.Namespace(t), names...)
	if err := env.Client.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	stale, _ := stored(t, env.Client, w)
	var ran [n]atomic.Int32
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := finalizer.NewHandler(env.Client)
			_ = h.Register(names[i], finalizer.Func(func(context.Context, client.Object) error {
				ran[i].Add(1)
				return nil
			}))
			_, errs[i] = h.Handle(ctx, stale.DeepCopy())
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || ran[i].Load() == 0 {
			t.Errorf("controller %d: ran %d, err %v", i, ran[i].Load(), errs[i])
		}
	}
	if got, ok := stored(t, env.Client, w); ok {
		t.Errorf("object still there with finalizers %v", got.Finalizers)
	}
}

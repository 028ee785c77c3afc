package finalizer_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/finalizer"
	"github.com/steadyk8s/steady/internal/testapi"
)

// Item 10: through a manager's cached client with a 300 ms watch lag, a
// Handle right after our own write, on the stale cached copy, succeeds and
// drops nothing.
func TestHandleThroughALaggingCache(t *testing.T) {
	env.Require(t)
	for _, withAPIReader := range []bool{true, false} {
		t.Run(map[bool]string{true: "with API reader", false: "cache only"}[withAPIReader], func(t *testing.T) {
			cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 300 * time.Millisecond, Informers: []client.Object{&testapi.Widget{}}})
			ctx := context.Background()
			c := cc.CacheOnly
			if withAPIReader {
				c = cc.Client
			}
			h := finalizer.NewHandler(c)
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

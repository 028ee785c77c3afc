package finalizer_test

import (
	"context"
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

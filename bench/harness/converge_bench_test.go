package harness

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	benchv1 "github.com/steadyk8s/steady/bench/api/v1alpha1"
	"github.com/steadyk8s/steady/bench/operator"
)

var convergeRuns atomic.Int64

// BenchmarkConvergeReconcile measures the reconcile that converges a new
// Team (finalizer, three children created, status written), called
// directly through the manager's cached client while the controller
// stands aside: the CPU of the whole process (the reconcile, and the
// informers taking in its writes) and the allocations each variant spends
// per Team converged. cluster-api's variant is left out: it converges in
// several reconciles, each waiting for the cache. It fails unless every
// reconcile makes exactly the requests the smoke test expects (5). Profile
// it with
//
//	go test -run '^$' -bench ConvergeReconcile -cpuprofile /tmp/cpu.out ./harness/
func BenchmarkConvergeReconcile(b *testing.B) {
	env.Require(b)
	for _, v := range []string{operator.Steady, operator.HandWritten} {
		b.Run(v, func(b *testing.B) {
			ctx := context.Background()
			// A namespace of its own for every call (the framework calls
			// this function more than once).
			run := int(convergeRuns.Add(1)) + 1000*int(time.Now().Unix()%1000000)
			r, stop, err := start(ctx, Config{RESTConfig: env.Config, N: 1, Run: run}, v)
			if err != nil {
				b.Fatal(err)
			}
			defer stop()
			r.tally.paused.Store(true)
			var cpu time.Duration
			requests := int64(0)
			n := 0
			b.ReportAllocs()
			b.ResetTimer()
			b.StopTimer()
			for range b.N {
				name := fmt.Sprintf("converge-%05d", n)
				n++
				if err := r.driver.Create(ctx, r.newTeam(name)); err != nil {
					b.Fatal(err)
				}
				key := types.NamespacedName{Namespace: r.ns, Name: name}
				if err := r.waitFor(ctx, time.Millisecond, func(ctx context.Context) (string, error) {
					if err := r.mgr.GetCache().Get(ctx, key, &benchv1.Team{}); err != nil {
						return err.Error(), nil
					}
					return "", nil
				}); err != nil {
					b.Fatal(err)
				}
				before, c0 := r.counter.requests.Load(), cpuTime()
				b.StartTimer()
				res, err := r.tally.inner.Reconcile(ctx, ctrl.Request{NamespacedName: key})
				b.StopTimer()
				cpu += cpuTime() - c0
				requests += r.counter.requests.Load() - before
				if err != nil || res != (ctrl.Result{}) {
					b.Fatalf("reconcile of %s: %+v, %v", name, res, err)
				}
			}
			b.ReportMetric(float64(requests)/float64(n), "requests/op")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/op")
			if requests != 5*int64(n) {
				b.Fatalf("%d requests for %d Teams, want 5 each", requests, n)
			}
		})
	}
}

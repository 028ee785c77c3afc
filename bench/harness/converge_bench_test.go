package harness

import (
	"context"
	"testing"
	"time"

	"github.com/steadyk8s/steady/bench/operator"
)

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
			next, requests, stop, err := convergeFixture(context.Background(), Config{RESTConfig: env.Config, Run: 400}, v)
			if err != nil {
				b.Fatal(err)
			}
			defer stop()
			var cpu time.Duration
			var sent int64
			b.ReportAllocs()
			b.ResetTimer()
			b.StopTimer()
			for range b.N {
				if err := next(func(reconcile func() error) error {
					r0, c0 := requests(), cpuTime()
					b.StartTimer()
					err := reconcile()
					b.StopTimer()
					cpu += cpuTime() - c0
					sent += requests() - r0
					return err
				}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(sent)/float64(b.N), "requests/op")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			if sent != convergeRequests*int64(b.N) {
				b.Fatalf("%d requests for %d Teams, want %d each", sent, b.N, convergeRequests)
			}
		})
	}
}

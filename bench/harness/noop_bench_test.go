package harness

import (
	"context"
	"testing"

	"github.com/steadyk8s/steady/bench/operator"
)

// BenchmarkNoopReconcile measures one reconcile of a converged Team, through
// the manager's cached client, when nothing changed: the CPU and
// allocations each variant spends to find out there is nothing to write.
// It fails if a reconcile sends a request. Profile it with
//
//	go test -run '^$' -bench NoopReconcile -cpuprofile /tmp/cpu.out ./harness/
func BenchmarkNoopReconcile(b *testing.B) {
	env.Require(b)
	for i, v := range operator.Variants {
		b.Run(v, func(b *testing.B) {
			reconcile, requests, stop, err := noopFixture(context.Background(), Config{RESTConfig: env.Config, Run: 200 + i}, v)
			if err != nil {
				b.Fatal(err)
			}
			defer stop()
			before := requests()
			b.ReportAllocs()
			for b.Loop() {
				if err := reconcile(); err != nil {
					b.Fatal(err)
				}
			}
			if n := requests() - before; n != 0 {
				b.Fatalf("%d requests while nothing changed", n)
			}
		})
	}
}

package harness

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
)

// NoopCost is what one reconcile of a converged Team costs its variant when
// nothing changed, through the manager's cached client.
type NoopCost struct {
	Variant string
	Run     int
	NsPerOp int64
	// CPUNsPerOp is the process's CPU time (user and system) per reconcile
	// over the benchmark's last, longest round: the reconcile and the
	// garbage collection of what it allocated, without the waits of a
	// shared machine that NsPerOp (wall time) counts.
	CPUNsPerOp  int64
	BytesPerOp  int64
	AllocsPerOp int64
	// Requests is how many requests all the reconciles sent (0 expected).
	Requests int64
}

// noopFixture starts variant with one converged Team and returns its
// reconcile and a count of the manager's requests (watches aside).
func noopFixture(ctx context.Context, cfg Config, variant string) (reconcile func() error, requests func() int64, stop func(), _ error) {
	cfg.N = 1
	r, stop, err := start(ctx, cfg, variant)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := r.converge(ctx, r.names); err != nil {
		stop()
		return nil, nil, nil, err
	}
	if err := r.waitIdle(ctx); err != nil {
		stop()
		return nil, nil, nil, err
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: r.ns, Name: r.names[0]}}
	reconcile = func() error {
		res, err := r.tally.inner.Reconcile(ctx, req)
		if err == nil && res != (ctrl.Result{}) {
			err = fmt.Errorf("reconcile returned %+v", res)
		}
		return err
	}
	return reconcile, r.counter.requests.Load, stop, nil
}

// MeasureNoop benchmarks (testing.Benchmark) one reconcile of a converged
// Team of variant when nothing changed.
func MeasureNoop(ctx context.Context, cfg Config, variant string) (NoopCost, error) {
	reconcile, requests, stop, err := noopFixture(ctx, cfg, variant)
	if err != nil {
		return NoopCost{}, err
	}
	defer stop()
	before := requests()
	var (
		failed  error
		cpuLast time.Duration // of the last round, the one testing.Benchmark reports
		nLast   int
	)
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		c0 := cpuTime()
		n := 0
		for b.Loop() {
			if err := reconcile(); err != nil {
				failed = err
				return
			}
			n++
		}
		cpuLast, nLast = cpuTime()-c0, n
	})
	if failed != nil {
		return NoopCost{}, fmt.Errorf("%s: %w", variant, failed)
	}
	if res.N == 0 {
		return NoopCost{}, errors.New(variant + ": the benchmark did not run")
	}
	return NoopCost{
		Variant: variant, Run: cfg.Run,
		NsPerOp: res.NsPerOp(), CPUNsPerOp: cpuLast.Nanoseconds() / int64(max(nLast, 1)), BytesPerOp: res.AllocedBytesPerOp(), AllocsPerOp: res.AllocsPerOp(),
		Requests: requests() - before,
	}, nil
}

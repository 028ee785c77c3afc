package harness

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/pprof"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	benchv1 "github.com/steadyk8s/steady/bench/api/v1alpha1"
)

// ConvergeCost is what the reconcile that converges a new Team (finalizer,
// three children created, status written) costs its variant, called
// directly through the manager's cached client while the controller
// stands aside, per Team: the CPU time of the whole process while it runs
// (the reconcile, and the informers taking in its writes), the bytes and
// objects allocated, and the requests.
type ConvergeCost struct {
	Variant string
	Run     int
	Teams   int
	// CPUNs, Bytes, Allocs and Requests are per Team.
	CPUNs, Bytes, Allocs, Requests float64
}

// convergeRequests is what one converging reconcile must send: the
// finalizer, three creates, the status (steady and hand-written).
const convergeRequests = 5

var convergeRuns atomic.Int64

// convergeFixture starts variant with its controller standing aside and
// returns a function that creates one new Team, waits until the cache
// shows it, and runs measured (the reconcile), which it calls with the
// Team's key.
func convergeFixture(ctx context.Context, cfg Config, variant string) (next func(measured func(reconcile func() error) error) error, requests func() int64, stop func(), _ error) {
	cfg.N = 1
	// A namespace of its own for every fixture.
	cfg.Run = cfg.Run*1000 + int(convergeRuns.Add(1))
	r, stop, err := start(ctx, cfg, variant)
	if err != nil {
		return nil, nil, nil, err
	}
	r.tally.paused.Store(true)
	n := 0
	next = func(measured func(reconcile func() error) error) error {
		name := fmt.Sprintf("converge-%05d", n)
		n++
		if err := r.driver.Create(ctx, r.newTeam(name)); err != nil {
			return err
		}
		key := types.NamespacedName{Namespace: r.ns, Name: name}
		if err := r.waitFor(ctx, time.Millisecond, func(ctx context.Context) (string, error) {
			if err := r.mgr.GetCache().Get(ctx, key, &benchv1.Team{}); err != nil {
				return err.Error(), nil
			}
			return "", nil
		}); err != nil {
			return err
		}
		return measured(func() error {
			res, err := r.tally.inner.Reconcile(ctx, ctrl.Request{NamespacedName: key})
			if err == nil && res != (ctrl.Result{}) {
				err = fmt.Errorf("reconcile of %s returned %+v", name, res)
			}
			return err
		})
	}
	return next, r.counter.requests.Load, stop, nil
}

// MeasureConverge converges teams new Teams of each variant, one reconcile
// each, and returns each variant's cost per Team. The variants take turns
// Team by Team (the order rotating from one Team to the next), each on a
// manager of its own, so that every variant's Teams are measured over the
// same stretch of time: a machine whose pace drifts (other processes, the
// control plane's own work) moves every variant's figures alike, and
// their ratio stays. It fails unless every reconcile sends exactly the 5
// requests of a converging Team.
func MeasureConverge(ctx context.Context, cfg Config, variants []string, teams int) ([]ConvergeCost, error) {
	if teams <= 0 || len(variants) == 0 {
		return nil, errors.New("no Team to converge")
	}
	type fixture struct {
		next                func(measured func(reconcile func() error) error) error
		requests            func() int64
		cpu                 time.Duration
		sent, allocs, bytes uint64
	}
	fs := make([]*fixture, len(variants))
	for i, v := range variants {
		next, requests, stop, err := convergeFixture(ctx, cfg, v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v, err)
		}
		defer stop()
		fs[i] = &fixture{next: next, requests: requests}
	}
	var before, after runtime.MemStats
	for t := range teams {
		for k := range variants {
			i := (t + k) % len(variants)
			f := fs[i]
			if err := f.next(func(reconcile func() error) error {
				r0 := f.requests()
				runtime.ReadMemStats(&before)
				c0 := cpuTime()
				var err error
				// Labelled, so that a CPU profile of the process tells the
				// variants' reconciles apart (pprof -tagfocus variant=steady).
				pprof.Do(ctx, pprof.Labels("variant", variants[i]), func(context.Context) { err = reconcile() })
				f.cpu += cpuTime() - c0
				runtime.ReadMemStats(&after)
				f.allocs += after.Mallocs - before.Mallocs
				f.bytes += after.TotalAlloc - before.TotalAlloc
				f.sent += uint64(f.requests() - r0)
				return err
			}); err != nil {
				return nil, fmt.Errorf("%s: %w", variants[i], err)
			}
		}
	}
	out := make([]ConvergeCost, len(variants))
	n := float64(teams)
	for i, f := range fs {
		if f.sent != convergeRequests*uint64(teams) {
			return nil, fmt.Errorf("%s: %d requests for %d Teams, want %d each", variants[i], f.sent, teams, convergeRequests)
		}
		out[i] = ConvergeCost{Variant: variants[i], Run: cfg.Run, Teams: teams,
			CPUNs: float64(f.cpu.Nanoseconds()) / n, Bytes: float64(f.bytes) / n, Allocs: float64(f.allocs) / n, Requests: float64(f.sent) / n}
	}
	return out, nil
}

package harness

import (
	"context"
	"errors"
	"fmt"
	"runtime"
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

// MeasureConverge converges teams new Teams of variant, one reconcile
// each, and returns the cost per Team. It fails unless every reconcile
// sends exactly the 5 requests of a converging Team.
func MeasureConverge(ctx context.Context, cfg Config, variant string, teams int) (ConvergeCost, error) {
	next, requests, stop, err := convergeFixture(ctx, cfg, variant)
	if err != nil {
		return ConvergeCost{}, err
	}
	defer stop()
	var cpu time.Duration
	var sent, allocs, bytes uint64
	var before, after runtime.MemStats
	for range teams {
		if err := next(func(reconcile func() error) error {
			r0 := requests()
			runtime.ReadMemStats(&before)
			c0 := cpuTime()
			err := reconcile()
			cpu += cpuTime() - c0
			runtime.ReadMemStats(&after)
			allocs += after.Mallocs - before.Mallocs
			bytes += after.TotalAlloc - before.TotalAlloc
			sent += uint64(requests() - r0)
			return err
		}); err != nil {
			return ConvergeCost{}, fmt.Errorf("%s: %w", variant, err)
		}
	}
	if teams == 0 {
		return ConvergeCost{}, errors.New("no Team to converge")
	}
	if sent != convergeRequests*uint64(teams) {
		return ConvergeCost{}, fmt.Errorf("%s: %d requests for %d Teams, want %d each", variant, sent, teams, convergeRequests)
	}
	t := float64(teams)
	return ConvergeCost{Variant: variant, Run: cfg.Run, Teams: teams,
		CPUNs: float64(cpu.Nanoseconds()) / t, Bytes: float64(bytes) / t, Allocs: float64(allocs) / t, Requests: float64(sent) / t}, nil
}

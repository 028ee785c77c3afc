package harness

import (
	"context"
	"sync/atomic"
	"time"

	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Reconciles count a controller's reconciles by result, as
// controller-runtime's controller_runtime_reconcile_total and
// controller_runtime_reconcile_errors_total do.
type Reconciles struct {
	// Total is every reconcile that finished.
	Total int64
	// Errors returned an error (retried with backoff).
	Errors int64
	// Requeues returned Requeue or RequeueAfter without an error.
	Requeues int64
}

// Sub returns r minus before.
func (r Reconciles) Sub(before Reconciles) Reconciles {
	return Reconciles{Total: r.Total - before.Total, Errors: r.Errors - before.Errors, Requeues: r.Requeues - before.Requeues}
}

// Add returns r plus other.
func (r Reconciles) Add(other Reconciles) Reconciles {
	return Reconciles{Total: r.Total + other.Total, Errors: r.Errors + other.Errors, Requeues: r.Requeues + other.Requeues}
}

// tally wraps a reconciler to count its reconciles and to tell when it
// last did anything.
type tally struct {
	inner    crreconcile.Reconciler
	total    atomic.Int64
	errors   atomic.Int64
	requeues atomic.Int64
	inflight atomic.Int64
	last     atomic.Int64 // unix nanoseconds of the last start or end
	// paused makes the controller's reconciles return at once, uncounted,
	// while a benchmark calls inner itself.
	paused atomic.Bool
	// stampCPU makes every reconcile store, as it ends, the process's CPU
	// time in lastCPU and the time in lastEnd (MeasureConvergePhase).
	stampCPU         atomic.Bool
	lastCPU, lastEnd atomic.Int64
}

func (t *tally) Reconcile(ctx context.Context, req crreconcile.Request) (crreconcile.Result, error) {
	if t.paused.Load() {
		return crreconcile.Result{}, nil
	}
	t.inflight.Add(1)
	t.last.Store(time.Now().UnixNano())
	res, err := t.inner.Reconcile(ctx, req)
	switch {
	case err != nil:
		t.errors.Add(1)
	case res.Requeue || res.RequeueAfter > 0: //nolint:staticcheck // counting what the reconciler returned
		t.requeues.Add(1)
	}
	t.total.Add(1)
	now := time.Now().UnixNano()
	if t.stampCPU.Load() {
		t.lastCPU.Store(int64(cpuTime()))
		t.lastEnd.Store(now)
	}
	t.last.Store(now)
	t.inflight.Add(-1)
	return res, err
}

func (t *tally) read() Reconciles {
	return Reconciles{Total: t.total.Load(), Errors: t.errors.Load(), Requeues: t.requeues.Load()}
}

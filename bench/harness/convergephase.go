package harness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// PhaseCost is what the converge phase cost one variant when measured in
// turns with the other variants (MeasureConvergePhase): its controller
// running as in the phase, Teams created in bursts (chunks) and taken to
// Ready by it, the variants taking turns chunk by chunk. Figures are per
// Team.
type PhaseCost struct {
	Variant string
	Run     int
	Teams   int
	Chunk   int
	// CPUNs is the CPU time of the whole process, per Team, from a chunk's
	// first create until its controller's last reconcile ended: the
	// reconciles, the informers taking in every write, the Go garbage
	// collector's cycles in that time, the harness's creates and checks
	// (alike for every variant).
	CPUNs float64
	// WallNs is the time, per Team, from a chunk's first create until its
	// last reconcile ended.
	WallNs float64
	// Reconciles, Writes and Requests are per Team: the reconciles, the
	// writes the API server accepted, and every request of the manager
	// (watches aside; a write refused for a stale read, a 409, and what
	// follows it included).
	Reconciles, Writes, Requests float64
	// Conflicts are the writes refused with a 409, and Errors the
	// reconciles that returned an error, in all.
	Conflicts, Errors int64
}

// MeasureConvergePhase runs the converge phase of each variant in turns:
// teams Teams per variant, created chunk Teams at a time (on 16 goroutines,
// as in the phase) and taken to Ready by the variant's controller, each
// variant on a manager of its own; after each chunk of one variant the
// next variant converges a chunk of its own, the order rotating from one
// chunk to the next. The phase's CPU is measured over the same stretch of
// time for every variant, so that a change in the machine's pace (other
// processes, the control plane's own work) moves every variant's figure
// alike, as MeasureConverge does for a single reconcile: run one variant's
// whole phase after the other's, as the phase tables do, and the ratio of
// their CPU moves with whatever else the machine is doing then.
//
// A chunk's CPU runs from its first create until the last reconcile of its
// controller ends (the reconcile its own writes' watch events trigger,
// which changes nothing); the harness then waits until the controller is
// idle (Config.IdleWindow) before the next chunk, and that wait is not
// measured.
//
// It fails unless the API server accepted exactly the 5 writes of a
// converging Team per Team from every variant (the finalizer, three
// creates, the status), as from steady and the hand-written code; a write
// refused for a stale read (a 409) is counted and reported, not asserted,
// as in the phase tables.
func MeasureConvergePhase(ctx context.Context, cfg Config, variants []string, teams, chunk int) ([]PhaseCost, error) {
	if teams <= 0 || len(variants) == 0 {
		return nil, errors.New("no Team to converge")
	}
	if chunk <= 0 {
		return nil, fmt.Errorf("chunks of %d Teams: want at least 1", chunk)
	}
	chunk = min(chunk, teams)
	type fixture struct {
		r                *runner
		all              []string
		cpu, wall        time.Duration
		reconciles, errs int64
		counts           Counts
	}
	fs := make([]*fixture, len(variants))
	for i, v := range variants {
		c := cfg
		c.N = teams
		r, stop, err := start(ctx, c, v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v, err)
		}
		defer stop()
		r.tally.stampCPU.Store(true)
		fs[i] = &fixture{r: r, all: r.names}
	}
	for from, k := 0, 0; from < teams; from, k = from+chunk, k+1 {
		to := min(from+chunk, teams)
		for j := range variants {
			i := (k + j) % len(variants)
			f := fs[i]
			r := f.r
			// The Teams of this chunk are created; every Team so far is
			// checked.
			r.names = f.all[:to]
			rec0, counts0 := r.tally.read(), r.counter.Snapshot()
			c0, t0 := cpuTime(), time.Now()
			err := r.converge(ctx, f.all[from:to])
			if err == nil {
				err = r.waitIdle(ctx)
			}
			if err != nil {
				return nil, fmt.Errorf("%s, Teams %d to %d: %w", variants[i], from, to, err)
			}
			f.cpu += time.Duration(r.tally.lastCPU.Load()) - c0
			f.wall += time.Unix(0, r.tally.lastEnd.Load()).Sub(t0)
			rec := r.tally.read().Sub(rec0)
			f.reconciles += rec.Total
			f.errs += rec.Errors
			f.counts = f.counts.Add(r.counter.Snapshot().Sub(counts0))
		}
	}
	out := make([]PhaseCost, len(variants))
	n := float64(teams)
	for i, f := range fs {
		writes := f.counts.Requests(func(k Key) bool { return k.OK() && k.Write() && !k.DryRun })
		if writes != convergeRequests*int64(teams) {
			return nil, fmt.Errorf("%s: %d writes accepted for %d Teams, want %d each", variants[i], writes, teams, convergeRequests)
		}
		out[i] = PhaseCost{Variant: variants[i], Run: cfg.Run, Teams: teams, Chunk: chunk,
			CPUNs: float64(f.cpu.Nanoseconds()) / n, WallNs: float64(f.wall.Nanoseconds()) / n,
			Reconciles: float64(f.reconciles) / n, Writes: float64(writes) / n, Requests: float64(f.counts.Requests(notWatch)) / n,
			Conflicts: f.counts.Requests(func(k Key) bool { return k.Code == http.StatusConflict }), Errors: f.errs}
	}
	return out, nil
}

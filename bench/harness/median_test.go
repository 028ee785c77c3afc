package harness

import (
	"math"
	"testing"
	"time"
)

// TestMedianPhaseIsNotMovedByOneBurst: of five repetitions of a phase, one
// with twice the wall time, a third more heap and the API server busy
// (something else ran meanwhile) leaves the medians at the other four's;
// requests and reconciles add up over all five.
func TestMedianPhaseIsNotMovedByOneBurst(t *testing.T) {
	get := Key{Verb: "GET", Resource: "teams", Code: 200}
	rep := func(ms int, peak uint64, server time.Duration, gets int64) PhaseResult {
		d := time.Duration(ms) * time.Millisecond
		c := Counts{}
		if gets > 0 {
			c[get] = Stat{Count: gets, RespBytes: 100 * gets}
		}
		return PhaseResult{Phase: PhaseNoop, Wall: d, Settle: d + time.Second, CPU: 2 * d, GCCPU: d / 4,
			PeakHeap: peak, LiveHeap: peak / 2, ControlPlaneCPU: map[string]time.Duration{"kube-apiserver": server},
			Counts: c, Reconciles: Reconciles{Total: 20, Errors: gets}}
	}
	prs := []PhaseResult{
		rep(150, 30<<20, 0, 0),
		rep(140, 29<<20, 10*time.Millisecond, 0),
		rep(330, 39<<20, 500*time.Millisecond, 1), // the burst
		rep(160, 31<<20, 0, 0),
		rep(145, 30<<20, 0, 2),
	}
	got := medianPhase(prs)
	want := PhaseResult{Phase: PhaseNoop, Repeats: 5, Wall: 150 * time.Millisecond, Settle: 1150 * time.Millisecond,
		CPU: 300 * time.Millisecond, GCCPU: 150 * time.Millisecond / 4, PeakHeap: 30 << 20, LiveHeap: 15 << 20,
		ControlPlaneCPU: map[string]time.Duration{"kube-apiserver": 0},
		Counts:          Counts{get: {Count: 3, RespBytes: 300}}, Reconciles: Reconciles{Total: 100, Errors: 3}}
	if got.Wall != want.Wall || got.Settle != want.Settle || got.CPU != want.CPU || got.GCCPU != want.GCCPU ||
		got.PeakHeap != want.PeakHeap || got.LiveHeap != want.LiveHeap || got.Repeats != want.Repeats ||
		got.ControlPlaneCPU["kube-apiserver"] != 0 || len(got.ControlPlaneCPU) != 1 ||
		got.Reconciles != want.Reconciles || len(got.Counts) != 1 || got.Counts[get] != want.Counts[get] {
		t.Errorf("medianPhase:\n got %+v\nwant %+v", got, want)
	}
	if one := medianPhase(prs[2:3]); one.Repeats != 0 || one.Wall != prs[2].Wall {
		t.Errorf("one repetition: got %+v, want it unchanged", one)
	}
	// An even count takes the lower middle one.
	if two := medianPhase(prs[:2]); two.Wall != 140*time.Millisecond {
		t.Errorf("two repetitions: wall %v, want 140ms", two.Wall)
	}
}

// TestMedianPhaseLeavesUnmeasuredOut: a control plane process measured in
// some repetitions only (its /proc entry unreadable in the others) has the
// median of the repetitions that measured it, not one that counts the
// others as zero seconds; one measured in none stays unmeasured (NaN in
// the report), as in a single run.
func TestMedianPhaseLeavesUnmeasuredOut(t *testing.T) {
	rep := func(cp map[string]time.Duration) PhaseResult {
		return PhaseResult{Phase: PhaseNoop, Wall: time.Second, ControlPlaneCPU: cp}
	}
	s := func(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }
	prs := []PhaseResult{
		rep(map[string]time.Duration{"kube-apiserver": s(200), "etcd": s(50)}),
		rep(nil), // /proc could not be read
		rep(map[string]time.Duration{"kube-apiserver": s(220)}),
		rep(nil),
		rep(map[string]time.Duration{"kube-apiserver": s(210), "etcd": s(40)}),
	}
	got := medianPhase(prs)
	if v, ok := got.ControlPlaneCPU["kube-apiserver"]; !ok || v != s(210) {
		t.Errorf("kube-apiserver: %v (present %v), want the median of the three that measured it, 210ms", v, ok)
	}
	if v, ok := got.ControlPlaneCPU["etcd"]; !ok || v != s(40) {
		t.Errorf("etcd: %v (present %v), want the lower middle of 40ms and 50ms", v, ok)
	}
	if none := medianPhase([]PhaseResult{rep(nil), rep(nil)}); none.ControlPlaneCPU != nil {
		t.Errorf("no repetition measured the control plane: %v, want none", none.ControlPlaneCPU)
	}
	if nan := controlPlaneSeconds("etcd")(medianPhase(prs[1:4])); !math.IsNaN(nan) {
		t.Errorf("etcd measured in none of the repetitions: %v s, want NaN", nan)
	}
}

package harness

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/steadyk8s/steady/bench/operator"
)

// TestGoalVerdicts: a goal is met in every run, on the mean only, or not,
// from the runs' paired ratios.
func TestGoalVerdicts(t *testing.T) {
	for _, tc := range []struct {
		steady, hand map[int]float64
		goal         float64
		want         string
	}{
		{map[int]float64{0: 100, 1: 104}, map[int]float64{0: 100, 1: 100}, 1.05, "met, in every run"},
		{map[int]float64{0: 90, 1: 112}, map[int]float64{0: 100, 1: 100}, 1.05, "met on the mean, not in every run"},
		{map[int]float64{0: 100, 1: 130}, map[int]float64{0: 100, 1: 100}, 1.05, "not met on the mean (met in some runs)"},
		{map[int]float64{0: 120, 1: 130}, map[int]float64{0: 100, 1: 100}, 1.05, "not met"},
		{map[int]float64{0: 120}, map[int]float64{1: 100}, 1.05, "not measured"}, // no run has both
	} {
		if got := pairRatios(tc.steady, tc.hand).verdict(tc.goal); got != tc.want {
			t.Errorf("%v / %v ≤ %.2f: %q, want %q", tc.steady, tc.hand, tc.goal, got, tc.want)
		}
	}
	// The mean ratio is of the means, not the mean of the ratios.
	if q := pairRatios(map[int]float64{0: 100, 1: 300}, map[int]float64{0: 200, 1: 200}); q.mean != 1 || q.min != 0.5 || q.max != 1.5 {
		t.Errorf("%+v", q)
	}
}

// TestWriteGoals writes the goals at the largest N without a lag, from
// the runs' results.
func TestWriteGoals(t *testing.T) {
	res := func(v string, n, run int, delay time.Duration, cpu time.Duration, peak uint64, dry int64) Result {
		var phases []PhaseResult
		for _, ph := range Phases {
			pr := PhaseResult{Phase: ph, CPU: cpu, PeakHeap: peak, Counts: Counts{}}
			if dry > 0 && ph == PhaseTouch {
				pr.Counts[Key{Verb: "PUT", Resource: "configmaps", DryRun: true, Code: 200}] = Stat{Count: dry}
			}
			phases = append(phases, pr)
		}
		return Result{Variant: v, Setup: Setup{N: n, WatchDelay: delay, Workers: 1}, Run: run, Phases: phases}
	}
	r := Report{
		Results: []Result{
			res(operator.Steady, 100, 0, 0, 9*time.Second, 100, 0), // a smaller N: not the one judged
			res(operator.HandWritten, 100, 0, 0, time.Second, 100, 0),
			res(operator.Steady, 1000, 0, 0, 2*time.Second, 105, 0),
			res(operator.HandWritten, 1000, 0, 0, 2*time.Second, 100, 0),
			res(operator.Steady, 1000, 1, 0, 2*time.Second, 105, 0),
			res(operator.HandWritten, 1000, 1, 0, 3*time.Second, 100, 0),
			res(operator.Steady, 2000, 0, time.Second, 9*time.Second, 900, 3), // lagging: not judged, but its dry runs count
			res(operator.HandWritten, 2000, 0, time.Second, time.Second, 100, 0),
		},
		Noop: []NoopCost{{Variant: operator.Steady, CPUNsPerOp: 50, AllocsPerOp: 500}, {Variant: operator.HandWritten, CPUNsPerOp: 100, AllocsPerOp: 600}},
		ConvergePhase: []PhaseCost{
			{Variant: operator.Steady, Run: 0, CPUNs: 1000}, {Variant: operator.HandWritten, Run: 0, CPUNs: 1000},
			{Variant: operator.Steady, Run: 1, CPUNs: 1100}, {Variant: operator.HandWritten, Run: 1, CPUNs: 1000},
		},
	}
	var b strings.Builder
	r.writeGoals(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) })
	out := b.String()
	for _, want := range []string{
		"at N = 1000",
		"| CPU to converge ≤ 1.05× | converge phase, CPU of the process | 0.80 (runs 0.67–1.00) | met, in every run |",
		"the hand-written code's converge phase took 2.00–3.00 s of CPU (1.50× from\nthe least to the most) for the same requests: the machine's pace moves",
		"| peak heap ≤ 1.1× | touch phase | 1.05 (runs 1.05–1.05) | met, in every run |",
		"| CPU per reconcile that changes nothing ≤ 1.1× | one no-op reconcile, CPU of the process | 0.50 | met, in every run |",
		"| CPU to converge ≤ 1.05× | one converging reconcile, CPU of the process | — | not measured |",
		"| CPU to converge ≤ 1.05× | converge phase in turns, CPU of the process | 1.05 (runs 1.00–1.10) | met on the mean, not in every run |",
		"| 0 dry runs | steady's dry runs, every phase, setup and run | 3 | not met |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

package harness

import (
	"fmt"
	"math"
	"slices"

	"github.com/steadyk8s/steady/bench/operator"
)

// ratios is steady's figure over the hand-written one's: of the means, and
// the smallest and largest of the runs' own ratios (a run measures both
// variants one after the other, so its ratio shares the machine's state).
type ratios struct {
	mean, min, max float64
	runs           int
}

func (q ratios) String() string {
	if q.runs == 0 {
		return "—"
	}
	s := fmt.Sprintf("%.2f", q.mean)
	if q.runs > 1 {
		s += fmt.Sprintf(" (runs %.2f–%.2f)", q.min, q.max)
	}
	return s
}

// verdict says whether q meets goal: on the mean, and in how many runs.
func (q ratios) verdict(goal float64) string {
	switch {
	case q.runs == 0:
		return "not measured"
	case q.max <= goal:
		return "met, in every run"
	case q.mean <= goal:
		return "met on the mean, not in every run"
	case q.min <= goal:
		return "not met on the mean (met in some runs)"
	}
	return "not met"
}

// pairRatios computes ratios from the steady and hand-written values of
// each run (keyed by run).
func pairRatios(steady, hand map[int]float64) ratios {
	q := ratios{min: math.Inf(1), max: math.Inf(-1)}
	var ss, hs float64
	for run, s := range steady {
		h, ok := hand[run]
		if !ok || h == 0 {
			continue
		}
		ss, hs = ss+s, hs+h
		q.min, q.max = math.Min(q.min, s/h), math.Max(q.max, s/h)
		q.runs++
	}
	if q.runs > 0 {
		q.mean = ss / hs
	}
	return q
}

// pairOf is pairRatios of value over items, each of a variant and run.
func pairOf[T any](items []T, of func(T) (variant string, run int), value func(T) float64) ratios {
	steady, hand := map[int]float64{}, map[int]float64{}
	for _, it := range items {
		switch v, run := of(it); v {
		case operator.Steady:
			steady[run] = value(it)
		case operator.HandWritten:
			hand[run] = value(it)
		}
	}
	return pairRatios(steady, hand)
}

// phaseRatios is pairRatios of metric m in phase of setup n.
func (r Report) phaseRatios(n Setup, phase string, m metric) ratios {
	var results []Result
	for _, res := range r.Results {
		if res.Setup == n {
			results = append(results, res)
		}
	}
	return pairOf(results, func(res Result) (string, int) { return res.Variant, res.Run },
		func(res Result) float64 { return m.value(res.Phase(phase)) })
}

func metricNamed(name string) metric {
	for _, m := range metrics {
		if m.name == name {
			return m
		}
	}
	panic("no metric " + name)
}

// writeGoals sets the figures issue 16 set goals for beside their goals,
// at the largest N run without a lagging cache.
func (r Report) writeGoals(p func(string, ...any)) {
	var top Setup
	for _, n := range r.setups() {
		if n.WatchDelay == 0 && n.N > top.N {
			top = n
		}
	}
	vs := r.variants()
	if top.N == 0 || !slices.Contains(vs, operator.Steady) || !slices.Contains(vs, operator.HandWritten) {
		return
	}
	p("## The goals\n\n")
	p("What issue 16 asked of steady against the hand-written code, at N = %d (phases) and per\n", top.N)
	p("reconcile (the two tables below the phases). A ratio is steady's figure over the hand-written\n")
	p("one's: of the means, and the range of the runs' own ratios. Times vary between runs on a\n")
	p("shared machine; allocations do not.\n\n")
	p("| goal | figure | steady / hand-written | |\n|---|---|---|---|\n")
	row := func(goal, figure string, q ratios, limit float64) {
		p("| %s | %s | %s | %s |\n", goal, figure, q, q.verdict(limit))
	}
	noop := func(value func(NoopCost) float64) ratios {
		return pairOf(r.Noop, func(c NoopCost) (string, int) { return c.Variant, c.Run }, value)
	}
	conv := func(value func(ConvergeCost) float64) ratios {
		return pairOf(r.Converge, func(c ConvergeCost) (string, int) { return c.Variant, c.Run }, value)
	}
	cpu := metricNamed("CPU time of the process (s)")
	const noopGoal, convergeGoal = "CPU per reconcile that changes nothing ≤ 1.1×", "CPU to converge ≤ 1.05×"
	row(noopGoal, "one no-op reconcile, CPU of the process", noop(func(c NoopCost) float64 { return float64(c.CPUNsPerOp) }), 1.1)
	row(noopGoal, "one no-op reconcile, allocations", noop(func(c NoopCost) float64 { return float64(c.AllocsPerOp) }), 1.1)
	row(noopGoal, "no-op phase, CPU of the process", r.phaseRatios(top, PhaseNoop, cpu), 1.1)
	row(convergeGoal, "converge phase, CPU of the process", r.phaseRatios(top, PhaseConverge, cpu), 1.05)
	if len(r.ConvergePhase) > 0 {
		row(convergeGoal, "converge phase in turns, CPU of the process", pairOf(r.ConvergePhase, func(c PhaseCost) (string, int) { return c.Variant, c.Run }, func(c PhaseCost) float64 { return c.CPUNs }), 1.05)
	}
	row(convergeGoal, "one converging reconcile, CPU of the process", conv(func(c ConvergeCost) float64 { return c.CPUNs }), 1.05)
	row(convergeGoal, "one converging reconcile, allocations", conv(func(c ConvergeCost) float64 { return c.Allocs }), 1.05)
	peak := metricNamed("peak heap (MiB)")
	for _, phase := range Phases {
		row("peak heap ≤ 1.1×", phase+" phase", r.phaseRatios(top, phase, peak), 1.1)
	}
	// Requests the goals want at zero, summed over every setup and run.
	var dry, rest float64
	dryM, reqM := metricNamed("dry runs"), metricNamed("requests (watches aside)")
	for _, res := range r.Results {
		if res.Variant != operator.Steady {
			continue
		}
		for _, ph := range res.Phases {
			dry += dryM.value(ph)
		}
		rest += reqM.value(res.Phase(PhaseNoop))
	}
	zero := func(v float64) string {
		if v == 0 {
			return "met"
		}
		return "not met"
	}
	p("| 0 dry runs | steady's dry runs, every phase, setup and run | %.0f | %s |\n", dry, zero(dry))
	p("| 0 requests for a converged owner and its children | steady's requests in the no-op phases | %.0f | %s |\n", rest, zero(rest))
	p("\n")
	r.writeResolution(p, top, cpu)
}

// writeResolution says how far one variant's converge phase CPU moved
// between runs for the same requests, and the kube-apiserver's beside it:
// what a phase ratio can resolve on this machine.
func (r Report) writeResolution(p func(string, ...any), top Setup, cpu metric) {
	c := r.cell(top, operator.HandWritten, PhaseConverge, cpu)
	if c.n < 2 || c.min <= 0 {
		return
	}
	p("Between its %d runs, the hand-written code's converge phase took %.2f–%.2f s of CPU (%.2f× from\n", c.n, c.min, c.max, c.max/c.min)
	p("the least to the most) for the same requests")
	if a := r.cell(top, operator.HandWritten, PhaseConverge, metricNamed(apiServerCPU)); a.n >= 2 && a.min > 0 {
		p(",\nand the kube-apiserver %.2f–%.2f s for them (%.2f×)", a.min, a.max, a.max/a.min)
	}
	p(": the machine's pace moves between runs, and a\n")
	p("ratio of CPU times from a few runs cannot tell differences smaller than that. The converging\n")
	p("reconcile rows are paired: the two variants take turns Team by Team over the same seconds, so\n")
	p("that the machine's pace moves both alike; the range of their runs' ratios is what is left of the\n")
	p("noise. The converge phase in turns is paired the same way, chunk by chunk of Teams (see its\n")
	p("section below). The no-op phase rows are the median of five repetitions. Allocations do not vary.\n\n")
}

package harness

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/steadyk8s/steady/bench/operator"
	"github.com/steadyk8s/steady/bench/weight"
)

// Machine describes where the benchmark ran.
type Machine struct {
	CPUModel    string
	CPUs        int
	GoVersion   string
	OS          string
	LoadBefore  string // /proc/loadavg at the start
	LoadAfter   string // and at the end
	Date        time.Time
	Duration    time.Duration
	Versions    [][2]string // module, version
	APIServer   string
	Runs        int
	IdleWindow  time.Duration
	GCQPS       int // the garbage collector's client rate limit
	CommandLine string
}

// Report is everything docs/benchmarks.md shows.
type Report struct {
	Machine Machine
	Results []Result
	Noop    []NoopCost
	// Converge is what a converging reconcile costs (MeasureConverge).
	Converge []ConvergeCost
	// ConvergePhase is the converge phase measured in turns
	// (MeasureConvergePhase).
	ConvergePhase []PhaseCost `json:",omitempty"`
	// LiveChildren is what keeping Deployment children costs, per way
	// (MeasureLiveChildren).
	LiveChildren []LiveChildCost `json:",omitempty"`
	Weight       []weight.Row
	// WeightErr is why the weight was not measured, if it was not.
	WeightErr string
}

// metric is one row of a phase table.
type metric struct {
	name string
	// value of one result's phase.
	value func(PhaseResult) float64
	// format of an averaged value.
	format func(float64) string
	// spread shows min–max across runs.
	spread bool
}

func notWatch(k Key) bool { return k.Verb != "WATCH" && k.Verb != "DISCOVERY" }

var metrics = []metric{
	{"wall time (s)", func(p PhaseResult) float64 { return p.Wall.Seconds() }, f2, true},
	{"CPU time of the process (s)", func(p PhaseResult) float64 { return p.CPU.Seconds() }, f2, true},
	{"of which the Go garbage collector, CPU (s, the runtime's estimate)", func(p PhaseResult) float64 { return p.GCCPU.Seconds() }, f2, false},
	{"of which the harness's checks of the cache, wall (s)", func(p PhaseResult) float64 { return p.CheckTime.Seconds() }, f2, false},
	{"of which the harness's checks of the cache, CPU (s)", func(p PhaseResult) float64 { return p.CheckCPU.Seconds() }, f2, false},
	{apiServerCPU, controlPlaneSeconds("kube-apiserver"), f2, true},
	{"etcd CPU (s), a process of its own", controlPlaneSeconds("etcd"), f2, true},
	{"requests (watches aside)", func(p PhaseResult) float64 { return float64(p.Counts.Requests(notWatch)) }, f0, false},
	{"writes accepted", func(p PhaseResult) float64 {
		return float64(p.Counts.Requests(func(k Key) bool { return k.Write() && !k.DryRun && k.OK() }))
	}, f0, false},
	{"dry runs", func(p PhaseResult) float64 { return float64(p.Counts.Requests(func(k Key) bool { return k.DryRun })) }, f0, false},
	{"GETs (API reader)", func(p PhaseResult) float64 {
		return float64(p.Counts.Requests(func(k Key) bool { return k.Verb == "GET" }))
	}, f0, false},
	{"409 (Conflict, AlreadyExists)", func(p PhaseResult) float64 {
		return float64(p.Counts.Requests(func(k Key) bool { return k.Code == 409 }))
	}, f0, false},
	{"other refusals (4xx, 5xx)", func(p PhaseResult) float64 {
		return float64(p.Counts.Requests(func(k Key) bool { return notWatch(k) && k.Code >= 400 && k.Code != 409 }))
	}, f0, false},
	{"reconciles", func(p PhaseResult) float64 { return float64(p.Reconciles.Total) }, f0, false},
	{"reconcile errors", func(p PhaseResult) float64 { return float64(p.Reconciles.Errors) }, f0, false},
	{"requeues (no error)", func(p PhaseResult) float64 { return float64(p.Reconciles.Requeues) }, f0, false},
	{"request bytes (KiB)", func(p PhaseResult) float64 { return float64(p.Counts.Sum(nil).ReqBytes) / 1024 }, f0, false},
	{"response bytes, watches included (KiB)", func(p PhaseResult) float64 { return float64(p.Counts.Sum(nil).RespBytes) / 1024 }, f0, false},
	{"peak heap (MiB)", func(p PhaseResult) float64 { return float64(p.PeakHeap) / (1 << 20) }, f1, false},
	{"live heap after the phase (MiB)", func(p PhaseResult) float64 { return float64(p.LiveHeap) / (1 << 20) }, f1, false},
}

// apiServerCPU names the kube-apiserver's CPU row.
const apiServerCPU = "kube-apiserver CPU (s), a process of its own"

// controlPlaneSeconds is a metric's value: the CPU seconds the named
// control plane process spent in the phase, NaN (no figure) where they were
// not measured.
func controlPlaneSeconds(name string) func(PhaseResult) float64 {
	return func(p PhaseResult) float64 {
		cpu, ok := p.ControlPlaneCPU[name]
		if !ok {
			return math.NaN()
		}
		return cpu.Seconds()
	}
}

func f0(v float64) string { return fmt.Sprintf("%.0f", v) }
func f1(v float64) string { return fmt.Sprintf("%.1f", v) }
func f2(v float64) string { return fmt.Sprintf("%.2f", v) }

// cell is the mean of a metric over the runs, with its range.
type cell struct {
	mean, min, max float64
	n              int
}

func (r Report) cell(n Setup, variant, phase string, m metric) cell {
	c := cell{min: math.Inf(1), max: math.Inf(-1)}
	sum := 0.0
	for _, res := range r.Results {
		if res.Setup != n || res.Variant != variant {
			continue
		}
		p := res.Phase(phase)
		v := m.value(p)
		if math.IsNaN(v) {
			continue // not measured in this run
		}
		sum += v
		c.min, c.max = math.Min(c.min, v), math.Max(c.max, v)
		c.n++
	}
	if c.n > 0 {
		c.mean = sum / float64(c.n)
	}
	return c
}

func (c cell) String(m metric) string {
	if c.n == 0 {
		return "—"
	}
	s := m.format(c.mean)
	if c.n > 1 && (m.spread || m.format(c.min) != m.format(c.max)) {
		s += " (" + m.format(c.min) + "–" + m.format(c.max) + ")"
	}
	return s
}

func ratio(a, b cell) string {
	switch {
	case a.n == 0 || b.n == 0:
		return "—"
	case a.mean == 0 && b.mean == 0:
		return "="
	case b.mean == 0:
		return "∞"
	}
	return fmt.Sprintf("%.2f", a.mean/b.mean)
}

// setups lists the setups run: by lag, workers and N.
func (r Report) setups() []Setup {
	var ss []Setup
	for _, res := range r.Results {
		if !slices.Contains(ss, res.Setup) {
			ss = append(ss, res.Setup)
		}
	}
	sort.Slice(ss, func(i, j int) bool {
		a, b := ss[i], ss[j]
		if a.WatchDelay != b.WatchDelay {
			return a.WatchDelay < b.WatchDelay
		}
		if a.Workers != b.Workers {
			return a.Workers < b.Workers
		}
		return a.N < b.N
	})
	return ss
}

func (r Report) variants() []string {
	var vs []string
	for _, v := range operator.Variants {
		for _, res := range r.Results {
			if res.Variant == v {
				vs = append(vs, v)
				break
			}
		}
	}
	return vs
}

// Write writes docs/benchmarks.md.
func (r Report) Write(w io.Writer) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Benchmarks: steady, hand-written controller-runtime and cluster-api's patch helper\n\n")
	p("<!-- Generated by `make bench` (bench/cmd/bench). Edit bench/harness/report.go, not this file. -->\n\n")
	p("%s", intro)
	r.writeMachine(p)
	r.writeGoals(p)
	for _, n := range r.setups() {
		r.writeSetup(p, n)
	}
	r.writeNoop(p)
	r.writeConverge(p)
	r.writeConvergePhase(p)
	r.writeLiveChildren(p)
	r.writeLosses(p)
	r.writeWeight(p)
	p("%s", method)
	_, err := io.WriteString(w, b.String())
	return err
}

const intro = `One operator, written three times, run one variant after the other in one process on one
control plane (etcd, kube-apiserver and kube-controller-manager with its garbage collector, from
[testenv](testing.md)), and measured phase by phase. The code is in [bench/](../bench/):

- a namespaced ` + "`Team`" + ` ([bench/api/v1alpha1](../bench/api/v1alpha1/types.go),
  [CRD](../bench/config/crd/bench.steady.dev_teams.yaml)) whose reconciler keeps a ConfigMap, a
  ServiceAccount and a RoleBinding per Team, two conditions (` + "`ChildrenReady`" + `, ` + "`Ready`" + `),
  ` + "`status.observedGeneration`" + ` and a finalizer;
- **steady** ([steady.go](../bench/operator/steady.go)): ` + "`reconcile.For`" + ` with ` + "`WithFinalizer`" + `,
  ` + "`WithReadySummary`" + ` and ` + "`WithObservedGeneration`" + `, on the manager's client carrying the manager's
  API reader, ` + "`conditions.MarkTrue`" + `, children with ` + "`ownership.CreateOrUpdate`" + `;
- **hand-written** ([handwritten.go](../bench/operator/handwritten.go)): careful controller-runtime
  code: ` + "`controllerutil.AddFinalizer`" + ` + ` + "`Update`" + `, ` + "`controllerutil.CreateOrUpdate`" + ` +
  ` + "`SetControllerReference`" + `, ` + "`meta.SetStatusCondition`" + `, ` + "`Status().Update`" + ` only when the
  status changed (typed equality), a conflict is a requeue;
- **cluster-api** ([clusterapi.go](../bench/operator/clusterapi.go)): as cluster-api's own
  controllers: ` + "`finalizers.EnsureFinalizer`" + `, then ` + "`patch.Helper`" + ` in a defer with
  ` + "`WithOwnedConditions`" + ` and ` + "`WithStatusObservedGeneration`" + `, children with ` + "`controllerutil`" + `.

The three write the same children and the same status, and are wired the same way (` + "`For`" + ` Team,
` + "`Owns`" + ` the three kinds, no predicate, one worker). Phases, per variant:

| phase | what the harness does | done when |
|---|---|---|
| converge | creates N Teams | every Team Ready with ` + "`observedGeneration`" + ` = ` + "`generation`" + `, finalizer set, its three children as wanted |
| touch | sets an annotation on every Team (nothing to do) and a wrong ` + "`bench.steady.dev/team`" + ` label on every child (a repair each) | every child written again after its tampering, and converged |
| no-op | sends 2N events through a channel source (two rounds of one per Team) while nothing changed; five times, the figures the median of the five (counts: their sum) | 2N reconciles done, each time |
| delete | deletes every Team | every Team gone (finalizer removed) and every child collected by the garbage collector |

Setups: N = 100 and N = 1000 Teams with one worker per controller and a cache that follows the API
server at once (a local control plane), and N = 100 with every watch event held back 200ms and two
workers, as on a loaded cluster: reconciles then read stale objects, and the variants' handling of
conflicts shows.

Request counts are exact where the code makes them so, and ` + "`make test`" + ` asserts them with N = 20
([smoke_test.go](../bench/harness/smoke_test.go)): each child created once; the Team written twice
in converge by steady and the hand-written code (finalizer, status); every tampered child
repaired by one update, without a dry run; **no request at all** in the no-op phase;
the finalizer removed once per Team. Times, CPU and heap are reported, never asserted; they come
from a shared machine (see the load average below) and vary from run to run (the ranges show by
how much).

`

const method = `## How it is measured

- **Isolation.** One CRD; each variant and run gets a namespace of its own and a manager of its own
  whose cache is restricted to that namespace (` + "`cache.Options.DefaultNamespaces`" + `), started
  before its phases and stopped after them. Variants run one after the other, never at the same
  time, so each one's CPU and heap are the process's; the order rotates between runs, and an
  unmeasured warm-up run (N = 20 of each variant) comes first.
- **Requests** are counted by a wrapping transport on the manager's ` + "`rest.Config`" + ` (its cache's
  LISTs and WATCHes included), by verb, resource, subresource, dry run and status code, with the
  bytes sent and received (a watch's bytes as its events arrive). The harness's own requests go
  through another client and are not counted.
- **Reconciles** are counted by a wrapper around each variant's reconciler: every reconcile, those
  that returned an error (steady's and cluster-api's code return a stale read as an error, as their
  guides say; the hand-written code returns a requeue instead: both are retried by
  controller-runtime with the same backoff).
- **Wall time** runs from the phase's first action to the state being visible in the manager's
  cache, checked every 20ms + 50µs per Team. The phase then ends once the controller has been
  idle (nothing running, no reconcile and no request) for the idle window; requests, reconciles
  and CPU are counted until then.
- **CPU** is the process's user + system time (` + "`getrusage`" + `) over the phase (with the Go runtime's
  estimate of its garbage collector's share, from ` + "`runtime/metrics`" + `): the manager, and the
  harness's writes (creating, patching, deleting Teams) and checks of the manager's cache, the
  same work for every variant. The API server, etcd and the controller manager are other
  processes and not included. The checks list nothing: event handlers on the cache's four
  informers record the latest Team, ConfigMap, ServiceAccount and RoleBinding of each name, and a
  check judges only the Teams changed since the last check and those still pending (a Team found
  converged is not checked again until one of its four objects changes), so the checks cost
  little, and little more for a slower variant. Their own share is shown apart: each check runs
  on a locked OS thread whose CPU time (` + "`CLOCK_THREAD_CPUTIME_ID`" + `) is read before and after; the
  handlers (some 35ns an event, on the informers' goroutines) are not in it. After each phase the
  state is checked again in full, with Lists through the API server.
- **Heap**: the largest ` + "`HeapAlloc`" + ` (garbage included) sampled every 2ms through
  ` + "`runtime/metrics`" + ` (which does not stop the world), and ` + "`HeapAlloc`" + ` after a GC at the end of
  the phase (mostly the manager's cache). The peak follows the live heap: the Go GC lets the heap
  grow to twice what the last cycle found live before it collects.
- The rate limits are envtest's (QPS 1000, burst 2000): the client never throttles at these sizes.
- The garbage collector runs in a kube-controller-manager started with ` + "`--kube-api-qps`" + ` as the
  table above says (` + "`-gc-qps`" + `): at its default of 20 requests a second, collecting the 3,000
  children of 1,000 Teams takes about 150 seconds, which would measure the collector's rate limit,
  not the operator. The smoke test uses testenv's controller manager as it is.
- The cache lag (` + "`-lag`" + `) holds back every chunk of the manager's watch streams by a fixed delay
  (a wrapping transport); requests and their answers are not delayed.

## Run it

` + "```sh" + `
make bench                                  # N = 100 and 1000, 3 runs each; regenerates this file
make bench BENCH_N=100,1000,10000           # with 10,000 Teams (long)
cd bench && go run ./cmd/bench -h           # every flag: runs, variants, workers, CPU profiles, JSON
cd bench && go run ./cmd/bench -n 100 -runs 1 -weight=false -out - -cpuprofile-dir /tmp/prof -cpuprofile-phase no-op
go tool pprof -top -tagfocus variant=steady /tmp/prof/steady-no-op-n100.pprof  # one variant's goroutines
make bench BENCH_FLAGS="-json /tmp/bench.json"  # keep the results, then, after a change to the text:
cd bench && go run ./cmd/bench -from-json /tmp/bench.json  # write this file again from them
` + "```" + `

` + "`make test`" + ` runs the N = 20 smoke test of every variant with its exact request counts. ` + "`make bench`" + `
needs the envtest assets (` + "`make envtest`" + `) and takes about 13 minutes on 2 cores. Every goroutine a variant's
manager starts (its workers, informers and connections) carries the profiler label ` + "`variant`" + `.
`

func (r Report) writeMachine(p func(string, ...any)) {
	m := r.Machine
	p("## Machine and versions\n\n")
	p("| | |\n|---|---|\n")
	p("| CPU | %s, %d logical CPUs |\n", m.CPUModel, m.CPUs)
	p("| load average (1, 5, 15 min) | %s at the start, %s at the end |\n", m.LoadBefore, m.LoadAfter)
	p("| OS, Go | %s, %s |\n", m.OS, m.GoVersion)
	p("| kube-apiserver | %s; kube-controller-manager (garbage collector, namespace controller) with --kube-api-qps %d |\n", m.APIServer, m.GCQPS)
	for _, v := range m.Versions {
		p("| %s | %s |\n", v[0], v[1])
	}
	p("| runs | %d per setup, the variants' order rotated between runs; idle window %s |\n", m.Runs, m.IdleWindow)
	p("| date, duration | %s, %s |\n", m.Date.UTC().Format("2006-01-02 15:04 UTC"), m.Duration.Round(time.Second))
	p("| command | `%s` |\n\n", m.CommandLine)
	p("Figures are the mean of the runs, with the range (min–max) where runs differ.\n\n")
}

func (r Report) writeSetup(p func(string, ...any), n Setup) {
	vs := r.variants()
	p("## %s\n\n", n)
	for _, phase := range Phases {
		p("### %s, %s\n\n", phase, n)
		p("| |")
		for _, v := range vs {
			p(" %s |", v)
		}
		ratios := slices.Contains(vs, operator.Steady)
		var others []string
		if ratios {
			for _, v := range vs {
				if v != operator.Steady {
					others = append(others, v)
					p(" steady / %s |", v)
				}
			}
		}
		p("\n|---|")
		for range len(vs) + len(others) {
			p("---:|")
		}
		p("\n")
		for _, m := range metrics {
			p("| %s |", m.name)
			for _, v := range vs {
				p(" %s |", r.cell(n, v, phase, m).String(m))
			}
			for _, o := range others {
				p(" %s |", ratio(r.cell(n, operator.Steady, phase, m), r.cell(n, o, phase, m)))
			}
			p("\n")
		}
		p("\n")
	}
	p("### Requests by verb, %s\n\n", n)
	p("Accepted and refused requests by verb, resource and status code, watches aside (first run).\n\n")
	p("| phase | variant | requests |\n|---|---|---|\n")
	for _, phase := range Phases {
		for _, v := range vs {
			for _, res := range r.Results {
				if res.Setup == n && res.Variant == v {
					s := res.Phase(phase).Counts.String()
					if s == "" {
						s = "none"
					}
					p("| %s | %s | %s |\n", phase, v, s)
					break
				}
			}
		}
	}
	p("\n")
}

// writeLosses lists every figure where steady costs more than another
// variant, by more than 10%.
func (r Report) writeLosses(p func(string, ...any)) {
	vs := r.variants()
	if !slices.Contains(vs, operator.Steady) {
		return
	}
	p("## Where steady costs more\n\n")
	p("Every figure above where steady is more than 10%% above another variant (times and heap are\n")
	p("noisy on a shared machine: compare them with the ranges).\n\n")
	any := false
	for _, n := range r.setups() {
		for _, phase := range Phases {
			for _, m := range metrics {
				if m.name == "reconciles" {
					continue // how many events a variant's own writes cause, read with the rest
				}
				s := r.cell(n, operator.Steady, phase, m)
				for _, o := range vs {
					if o == operator.Steady {
						continue
					}
					c := r.cell(n, o, phase, m)
					if s.n == 0 || c.n == 0 || s.mean <= c.mean*1.1 || s.mean-c.mean < minDiff(m) {
						continue
					}
					any = true
					p("- %s, %s, %s: steady %s, %s %s (%s×)\n", n, phase, m.name, s.String(m), o, c.String(m), ratio(s, c))
				}
			}
		}
	}
	if !any {
		p("Nothing.\n")
	}
	p("\n%s", causes)
}

// minDiff is the smallest difference worth listing.
func minDiff(m metric) float64 {
	if strings.Contains(m.name, "(s)") {
		return 0.05
	}
	if strings.Contains(m.name, "MiB") || strings.Contains(m.name, "KiB") {
		return 1
	}
	return 0.5
}

const causes = `What causes it, as far as the counters and the CPU profile tell:

- **Writes go through the patch engine.** A write of steady's is a merge patch computed from the
  snapshot, with only what changed in it: both objects are converted to maps by apimachinery's
  converter, diffed, the condition lists and finalizers rebased on the latest object, and the
  body encoded by encoding/json. The hand-written code sends the whole object with ` + "`Update`" + `,
  which sends more bytes (the request-bytes rows). The engine's own work
  (` + "`go test -bench Patch -benchmem ./internal/patch/`" + `) is 109 allocations (9.2 KB) for the
  finalizer write and 166 (13 KB) for the first status, about 15 and 21 µs; the hand-tuned
  converter, encoder and direct writes that made it 11 and 31 allocations (3 and 9 µs) are gone.
  Steady's own code in a converging reconcile, with the API server's answers stubbed out
  (` + "`go test -bench ConvergeOverhead ./operator/`" + `, its own-ns/op), is about 80 µs against the
  hand-written code's 10 µs (about 66 µs with the hand-tuned engine), a few per cent of the
  reconcile's process CPU.
  In the process, with cold caches, the same code costs several times that, and what the answers
  and watch events carry (the response-bytes rows) is decoded and
  collected by the garbage collector (the allocation rows).
- **The owner record** (` + "`ownership.RecordOwner{}`" + `: restore-safe children, docs/ownership.md) is
  opt-in, and the bench's steady operator does not pass it: its children carry no
  ` + "`ownership.steady.dev/`" + ` label or annotation, as the other variants' do not. Where it is passed,
  each child carries the labels ` + "`ownership.steady.dev/owner-kind`" + ` and ` + "`owner-name`" + `: two more
  entries in the label map each child has anyway, their strings and a ` + "`managedFields`" + ` entry,
  some 200 bytes a child in the manager's cache (about 0.6 MiB of the live heap at N = 1000, 3,000
  children, 1.04× the hand-written code's in the runs that measured it, when every child carried
  it), and part of the bytes of creates and repairs; a converging reconcile's allocations went from
  1.04× to 1.02× the hand-written code's without it, its bytes from 1.05× to 1.02×, its CPU within
  the noise.
- **A reconcile that changes nothing** is a typed equality check per object, as in the other
  variants: ` + "`ownership.CreateOrUpdate`" + ` compares the mutated child with the live one field for field
  and returns before any JSON work or REST mapping, ` + "`Patcher.Patch`" + ` likewise for the owner. The
  table above shows its cost per reconcile; most of what is left is controller-runtime's cached
  read (a deep copy and a REST mapping per Get), which every variant pays.
- **A lagging cache.** ` + "`reconcile.For`" + ` reads its own writes: an object the cache shows older than
  this process's last write of it is read again through the API reader (the GETs row), so that the
  reconcile never computes from a state older than what it wrote. A child created by the previous
  reconcile that the cache does not show yet is created again and refused (409 AlreadyExists),
  then read and updated as the others do; steady returns those refusals as errors (retried with
  controller-runtime's backoff), the hand-written code as a requeue.
- **Writes per owner.** steady and the hand-written code write a new Team twice (finalizer,
  status); cluster-api's helper writes the conditions and the rest of the status
  (observedGeneration) in two status patches (3 writes), and in the delete phase sends a status
  patch after the finalizer removal that answers 404.

`

func (r Report) writeWeight(p func(string, ...any)) {
	p("## Weight\n\n")
	if r.WeightErr != "" {
		p("Not measured: %s\n\n", r.WeightErr)
		return
	}
	if len(r.Weight) == 0 {
		p("Not measured in this run (`-weight=false`).\n\n")
		return
	}
	p("A tiny operator main ([bench/weight/base](../bench/weight/base/base.go): a manager and one\n")
	p("controller) importing one package each ([bench/weight/mains](../bench/weight/mains/)): the modules\n")
	p("its packages come from and the packages (`go list -deps`, the main module and the standard\n")
	p("library aside), and the binary built with `go build -trimpath -ldflags='-s -w'`.\n\n")
	p("| main | modules | packages | modules added to controller-runtime's | binary (MiB) | added (MiB) |\n|---|---:|---:|---|---:|---:|\n")
	base := r.Weight[0]
	for _, row := range r.Weight {
		added := strings.Join(row.Added, ", ")
		if added == "" {
			added = "none"
		}
		if row.Main == base.Main {
			added = "(baseline)"
		}
		p("| %s | %d | %d | %s | %.1f | %+.1f |\n", row.Main, len(row.Modules), row.Packages, added,
			float64(row.Bytes)/(1<<20), float64(row.Bytes-base.Bytes)/(1<<20))
	}
	p("\n%s", weightNotes)
}

const weightNotes = `- ` + "`reconcile`" + `, ` + "`conditions`" + `, ` + "`finalizer`" + ` and ` + "`ownership`" + ` add no module to controller-runtime's
  but steady itself; ` + "`conditions`" + ` has its own setter and no longer imports cluster-api (its
  interop with cluster-api's condition types is tested, not linked).
- zap and kubectl are in no binary here: zap comes only with ` + "`testenv`" + ` (its test logger), kubectl
  only into the module graph (go.mod), through cli-utils' tests, never into a binary; cli-runtime
  and kustomize come only with ` + "`applyset/cliutils`" + `.

`

func (r Report) writeNoop(p func(string, ...any)) {
	if len(r.Noop) == 0 {
		return
	}
	p("## One reconcile when nothing changed\n\n")
	p("One converged Team, its reconcile called in a loop (`testing.Benchmark`) through the manager's\n")
	p("cached client: what each variant spends to find out there is nothing to write. No variant sends\n")
	p("a request. Time is wall time per reconcile; CPU is the whole process's over the loop (the garbage\n")
	p("collector's work included, other processes' not), the better measure on a shared machine.\n")
	p("`go test -run '^$' -bench NoopReconcile -cpuprofile cpu.out ./harness/` in bench/ profiles it.\n\n")
	var samples []costSample
	for _, c := range r.Noop {
		samples = append(samples, costSample{c.Variant, []float64{float64(c.NsPerOp) / 1e3, float64(c.CPUNsPerOp) / 1e3, float64(c.BytesPerOp) / 1024, float64(c.AllocsPerOp), float64(c.Requests)}})
	}
	writeCosts(p, r.variants(), samples, []costRow{
		{"time per reconcile (µs)", metric{format: f0, spread: true}},
		{"CPU time of the process per reconcile (µs)", metric{format: f0, spread: true}},
		{"allocated per reconcile (KiB)", metric{format: f1}},
		{"allocations per reconcile", metric{format: f0}},
		{"requests, all reconciles", metric{format: f0}},
	})
}

func (r Report) writeConverge(p func(string, ...any)) {
	if len(r.Converge) == 0 {
		return
	}
	p("## One reconcile that converges a new Team\n\n")
	p("The reconcile that takes a new Team to Ready (finalizer, three children created, status written:\n")
	p("5 requests, asserted), called directly through the manager's cached client while the controller\n")
	p("stands aside, one new Team after the other (%d per variant and run), the variants taking turns Team by\n", r.Converge[0].Teams)
	p("Team, each on a manager of its own, so that both are measured over the same seconds and a change in\n")
	p("the machine's pace moves both alike (a run's ratio is then a paired one). CPU is the whole process's while\n")
	p("the reconcile runs (the informers taking in its writes included); allocations are counted the\n")
	p("same way. This isolates the converge phase's reconciles from the harness and the garbage\n")
	p("collector's timing. cluster-api's variant converges in several reconciles, each waiting for the\n")
	p("cache, and is left out. `go test -run '^$' -bench ConvergeReconcile -cpuprofile cpu.out ./harness/`\n")
	p("in bench/ profiles it.\n\n")
	var samples []costSample
	for _, c := range r.Converge {
		samples = append(samples, costSample{c.Variant, []float64{c.CPUNs / 1e3, c.Bytes / 1024, c.Allocs, c.Requests}})
	}
	writeCosts(p, r.variants(), samples, []costRow{
		{"CPU time of the process per Team (µs)", metric{format: f0, spread: true}},
		{"allocated per Team (KiB)", metric{format: f1}},
		{"allocations per Team", metric{format: f0}},
		{"requests per Team", metric{format: f0}},
	})
}

func (r Report) writeLiveChildren(p func(string, ...any)) {
	if len(r.LiveChildren) == 0 {
		return
	}
	p("## Children in a live cluster\n\n")
	p("A child kind with server defaults and a live status: %d Deployments (replicas 0), each the child of a\n", r.LiveChildren[0].Children)
	p("ConfigMap, under kube-controller-manager's deployment and replicaset controllers, which write their\n")
	p("status and make their ReplicaSets. Each way keeps its own %d in a namespace of its own, called as a\n", r.LiveChildren[0].Children)
	p("reconcile calls it, through a manager's cached client, over every owner in a pass (4 at once); the\n")
	p("requests of the operator's client are counted per pass. Passes: the create; once the deployment\n")
	p("controller has written every status and the cache shows it; once another field manager has set a label\n")
	p("and `spec.minReadySeconds` on every child; once every child's status changed again (another\n")
	p("writer's condition); and twice with a new manager (a restarted process: nothing remembered). The\n")
	p("ways: steady's `ownership.CreateOrUpdate` with the fields set one by one on the child as read\n")
	p("(replicas and selector on create only), steady's `ownership.Apply` with client-go's apply\n")
	p("configuration, and the hand-written `controllerutil.CreateOrUpdate` with the same mutate.\n\n")
	p("| way |")
	for _, pass := range LivePasses {
		p(" %s |", pass)
	}
	p(" another manager's fields lost | wall time |\n|---|")
	for range LivePasses {
		p("---|")
	}
	p("---|---|\n")
	for _, c := range r.LiveChildren {
		p("| %s |", c.Variant)
		for _, pass := range LivePasses {
			req, w := c.PerChild(pass)
			p(" %.3f (%.3f) |", req, w)
		}
		p(" %d of %d | %s |\n", c.OthersLost, c.Children, c.Wall.Round(time.Second))
	}
	p("\nRequests per child (writes among them, in brackets).\n\n")
}

func (r Report) writeConvergePhase(p func(string, ...any)) {
	if len(r.ConvergePhase) == 0 {
		return
	}
	c := r.ConvergePhase[0]
	p("## The converge phase, in turns\n\n")
	p("The converge phase again, each variant's controller running as in the phase tables, but the variants\n")
	p("taking turns: %d Teams per variant and run, created %d at a time (on 16 goroutines, as in the phase),\n", c.Teams, c.Chunk)
	p("and after each such chunk of one variant has converged and its controller is idle, the other variant\n")
	p("converges a chunk of its own, the order alternating from one chunk to the next. Both variants' phases\n")
	p("are then measured over the same stretch of time, chunk by chunk, and a change in the machine's pace moves\n")
	p("both alike, as in the paired reconcile above; in the phase tables one variant's whole phase runs minutes\n")
	p("after the other's. A chunk's CPU is the whole process's from its first create until the last reconcile of\n")
	p("its controller ended (the one its own writes trigger, which changes nothing): the reconciles, the informers\n")
	p("taking in every write, the Go garbage collector's cycles that run in that time, and the harness's creates\n")
	p("and checks. The harness's share is alike for both (its creates cost about 125–200 µs per Team, 6–8%% of\n")
	p("either figure) and pulls the ratio toward 1, by less than 0.01 at the ratios seen. The wait for the\n")
	p("controller to be idle before the next chunk is not measured (about 1–1.5%% of either figure, alike). The\n")
	p("accepted writes are asserted, 5 per Team, as the smoke test asserts them in the phase; a write refused\n")
	p("for a stale read (a 409) is counted, not asserted.\n\n")
	var samples []costSample
	for _, c := range r.ConvergePhase {
		samples = append(samples, costSample{c.Variant, []float64{c.CPUNs / 1e3, c.WallNs / 1e6, c.Reconciles, c.Requests, float64(c.Conflicts)}})
	}
	writeCosts(p, r.variants(), samples, []costRow{
		{"CPU time of the process per Team (µs)", metric{format: f0, spread: true}},
		{"wall time per Team (ms)", metric{format: f2, spread: true}},
		{"reconciles per Team", metric{format: f2}},
		{"requests per Team (watches aside)", metric{format: f2}},
		{"409 Conflict, in all", metric{format: f0}},
	})
}

// costSample is one measurement of a variant: a value per costRow.
type costSample struct {
	variant string
	values  []float64
}

type costRow struct {
	name string
	m    metric
}

// writeCosts writes a table of rows by variant (mean and range of the
// samples), with steady's ratios to the others.
func writeCosts(p func(string, ...any), all []string, samples []costSample, rows []costRow) {
	var vs []string
	for _, v := range all {
		if slices.ContainsFunc(samples, func(s costSample) bool { return s.variant == v }) {
			vs = append(vs, v)
		}
	}
	mk := func(v string, row int) cell {
		c := cell{min: math.Inf(1), max: math.Inf(-1)}
		sum := 0.0
		for _, s := range samples {
			if s.variant != v {
				continue
			}
			x := s.values[row]
			sum += x
			c.min, c.max = math.Min(c.min, x), math.Max(c.max, x)
			c.n++
		}
		if c.n > 0 {
			c.mean = sum / float64(c.n)
		}
		return c
	}
	p("| |")
	for _, v := range vs {
		p(" %s |", v)
	}
	var others []string
	if slices.Contains(vs, operator.Steady) {
		for _, v := range vs {
			if v != operator.Steady {
				others = append(others, v)
				p(" steady / %s |", v)
			}
		}
	}
	p("\n|---|")
	for range len(vs) + len(others) {
		p("---:|")
	}
	p("\n")
	for i, row := range rows {
		p("| %s |", row.name)
		cells := map[string]cell{}
		for _, v := range vs {
			cells[v] = mk(v, i)
			p(" %s |", cells[v].String(row.m))
		}
		for _, o := range others {
			p(" %s |", ratio(cells[operator.Steady], cells[o]))
		}
		p("\n")
	}
	p("\n")
}

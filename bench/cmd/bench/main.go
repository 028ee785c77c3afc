// Command bench runs steady's benchmark and regenerates docs/benchmarks.md:
// the Team operator written with steady, with hand-written
// controller-runtime code and with cluster-api's patch helper, each run on
// a manager of its own, one after the other, in this process, on one local
// control plane with a garbage collector (testenv), N Teams at a time; and
// the weight of small mains importing steady's packages.
//
//	cd bench && go run ./cmd/bench -n 100,1000 -runs 3 -out ../docs/benchmarks.md
//
// It needs the envtest assets: KUBEBUILDER_ASSETS, or `make envtest`.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/steadyk8s/steady/testenv"

	"github.com/steadyk8s/steady/bench"
	"github.com/steadyk8s/steady/bench/harness"
	"github.com/steadyk8s/steady/bench/operator"
	"github.com/steadyk8s/steady/bench/weight"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		sizes         = flag.String("n", "100,1000", "numbers of Teams, comma-separated (10000 works too, and takes long)")
		runs          = flag.Int("runs", 3, "runs per N; the variants' order rotates between runs (3: each variant once in each place)")
		variants      = flag.String("variants", strings.Join(operator.Variants, ","), "variants to run")
		workers       = flag.Int("workers", 1, "MaxConcurrentReconciles of every controller")
		idle          = flag.Duration("idle", 500*time.Millisecond, "how long a controller must be idle for a phase to end")
		warmup        = flag.Bool("warmup", true, "run every variant once with 20 Teams, unmeasured, first")
		doWeight      = flag.Bool("weight", true, "measure the weight of the mains in weight/mains (builds 7 binaries)")
		out           = flag.String("out", "../docs/benchmarks.md", "the report, - for stdout")
		jsonOut       = flag.String("json", "", "also write the raw results as JSON to this file")
		convergeTeams = flag.Int("converge-teams", 1000, "new Teams converged one reconcile each, per variant and run, to measure a converging reconcile (a run of 300 moved its ratio by 0.04 either way); 0: don't")
		phaseTeams    = flag.Int("phase-teams", 1000, "Teams per variant and run of the converge phase measured in turns (the variants converging -phase-chunk Teams each in turn); 0: don't")
		phaseChunk    = flag.Int("phase-chunk", 100, "Teams per chunk of -phase-teams")
		profileDir    = flag.String("cpuprofile-dir", "", "write a CPU profile of -cpuprofile-phase of every variant here, and a heap profile after it")
		profPhase     = flag.String("cpuprofile-phase", harness.PhaseNoop, "the phase to profile: "+strings.Join(harness.Phases, ", "))
		lagN          = flag.Int("lag-n", 100, "also run this many Teams with the manager's cache held back by -lag and -lag-workers workers; 0: don't")
		lag           = flag.Duration("lag", 200*time.Millisecond, "how far the manager's cache lags in the -lag-n setup")
		lagWorkers    = flag.Int("lag-workers", 2, "MaxConcurrentReconciles in the -lag-n setup")
		gcQPS         = flag.Int("gc-qps", 1000, "client rate limit of the garbage collector's kube-controller-manager; 0: testenv's (20 a second)")
		liveN         = flag.Int("live-n", 10000, "Deployment children per way in the live-children setup (under the deployment controller, with a restart); 0: don't")
		fromJSON      = flag.String("from-json", "", "run nothing: write the report from an earlier run's -json results (after a change to the report's text)")
	)
	flag.Parse()
	if *fromJSON != "" {
		data, err := os.ReadFile(*fromJSON)
		if err != nil {
			return err
		}
		var rep harness.Report
		if err := json.Unmarshal(data, &rep); err != nil {
			return fmt.Errorf("-from-json %s: %w", *fromJSON, err)
		}
		return writeReport(rep, *out)
	}
	if *profileDir != "" {
		// Fine-grained heap profiles: the live heaps differ by a few MiB.
		runtime.MemProfileRate = 4096
	}
	ctrl.SetLogger(logr.Discard())
	var ns []int
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return fmt.Errorf("-n: %q is not a number of Teams", s)
		}
		ns = append(ns, n)
	}
	if err := checkPhaseChunk(*phaseTeams, *phaseChunk); err != nil {
		return err
	}
	vs := strings.Split(*variants, ",")
	for _, v := range vs {
		if !contains(operator.Variants, v) {
			return fmt.Errorf("-variants: unknown variant %q (want %s)", v, strings.Join(operator.Variants, ", "))
		}
	}
	if *profileDir != "" {
		if err := os.MkdirAll(*profileDir, 0o755); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	started := time.Now()
	rep := harness.Report{Machine: machine()}
	rep.Machine.Runs, rep.Machine.IdleWindow = *runs, *idle
	rep.Machine.CommandLine = "go run ./cmd/bench " + strings.Join(os.Args[1:], " ")

	opts := []testenv.Option{
		testenv.WithCRDs{FS: bench.CRDs, Paths: []string{"config/crd"}},
		testenv.WithScheme{Scheme: harness.NewScheme()},
	}
	if *gcQPS == 0 {
		opts = append(opts, testenv.WithControllerManager{Controllers: []string{"deployment", "replicaset"}})
	}
	env := testenv.New(opts...)
	logf("starting the control plane")
	if err := env.Start(); err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	rep.Machine.GCQPS = 20
	if *gcQPS > 0 {
		stopGC, err := harness.StartGarbageCollector(ctx, env, *gcQPS)
		if err != nil {
			return err
		}
		defer stopGC()
		rep.Machine.GCQPS = *gcQPS
	}
	if dc, err := discovery.NewDiscoveryClientForConfig(env.Config); err == nil {
		if v, err := dc.ServerVersion(); err == nil {
			rep.Machine.APIServer = v.GitVersion
		}
	}

	cfg := harness.Config{RESTConfig: env.Config, Workers: *workers, IdleWindow: *idle, Logf: logf}
	if *warmup {
		for i, v := range vs {
			c := cfg
			c.N, c.Run = 20, 100+i
			if _, err := harness.RunVariant(ctx, c, v); err != nil {
				return fmt.Errorf("warm-up: %w", err)
			}
		}
	}
	setups := []harness.Setup{}
	for _, n := range ns {
		setups = append(setups, harness.Setup{N: n, Workers: *workers})
	}
	if *lagN > 0 {
		setups = append(setups, harness.Setup{N: *lagN, WatchDelay: *lag, Workers: *lagWorkers})
	}
	for _, s := range setups {
		for run := range *runs {
			order := append(append([]string{}, vs[run%len(vs):]...), vs[:run%len(vs)]...)
			for _, v := range order {
				c := cfg
				c.N, c.Run, c.WatchDelay, c.Workers = s.N, run, s.WatchDelay, s.Workers
				if *profileDir != "" && run == 0 && s.WatchDelay == 0 {
					c.ProfileDir, c.ProfilePhase = *profileDir, *profPhase
				}
				res, err := harness.RunVariant(ctx, c, v)
				if err != nil {
					return err
				}
				rep.Results = append(rep.Results, res)
				for _, p := range res.Phases {
					logf("  %s %s run %d %-8s wall %6.2fs CPU %6.2fs requests %s", v, s, run, p.Phase, p.Wall.Seconds(), p.CPU.Seconds(), p.Counts)
				}
			}
		}
	}
	for run := range *runs {
		order := append(append([]string{}, vs[run%len(vs):]...), vs[:run%len(vs)]...)
		for _, v := range order {
			c := cfg
			c.Run = 300 + run
			cost, err := harness.MeasureNoop(ctx, c, v)
			if err != nil {
				return err
			}
			logf("  %s: one no-op reconcile %.0fµs, %d B, %d allocations, %d requests", v, float64(cost.NsPerOp)/1e3, cost.BytesPerOp, cost.AllocsPerOp, cost.Requests)
			rep.Noop = append(rep.Noop, cost)
		}
		// cluster-api's variant converges in several reconciles: left out.
		conv := slices.DeleteFunc(slices.Clone(order), func(v string) bool { return v == operator.ClusterAPI })
		if *convergeTeams > 0 && len(conv) > 0 {
			c := cfg
			c.Run = 310 + run
			costs, err := harness.MeasureConverge(ctx, c, conv, *convergeTeams)
			if err != nil {
				return err
			}
			for _, cost := range costs {
				logf("  %s: one converging reconcile %.0fµs CPU, %.0f B, %.0f allocations, %.0f requests", cost.Variant, cost.CPUNs/1e3, cost.Bytes, cost.Allocs, cost.Requests)
			}
			rep.Converge = append(rep.Converge, costs...)
		}
		if *phaseTeams > 0 && len(conv) > 0 {
			c := cfg
			c.Run = 320 + run
			costs, err := harness.MeasureConvergePhase(ctx, c, conv, *phaseTeams, *phaseChunk)
			if err != nil {
				return err
			}
			for _, cost := range costs {
				logf("  %s: converge phase in turns %.0fµs CPU, %.2fms wall, %.2f reconciles, %.0f requests per Team", cost.Variant, cost.CPUNs/1e3, cost.WallNs/1e6, cost.Reconciles, cost.Requests)
			}
			rep.ConvergePhase = append(rep.ConvergePhase, costs...)
		}
	}
	if *liveN > 0 {
		logf("live children: %d Deployments per way", *liveN)
		costs, err := harness.MeasureLiveChildren(ctx, env.Config, env.Client, harness.LiveVariants, *liveN, 4, logf)
		if err != nil {
			// The report of everything else is kept; the ways measured
			// before the failure are in it.
			logf("live children: %v", err)
		}
		rep.LiveChildren = costs
	}
	if *doWeight {
		logf("weighing the mains in weight/mains")
		dir, err := os.Getwd()
		if err == nil {
			rep.Weight, err = weight.Measure(ctx, dir)
		}
		if err != nil {
			rep.WeightErr = err.Error()
			logf("weight: %v", err)
		}
	}
	rep.Machine.LoadAfter = loadavg()
	rep.Machine.Duration = time.Since(started)

	if *jsonOut != "" {
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*jsonOut, data, 0o644); err != nil {
			return err
		}
	}
	if err := writeReport(rep, *out); err != nil {
		return err
	}
	logf("done in %s", time.Since(started).Round(time.Second))
	return nil
}

// checkPhaseChunk refuses a -phase-chunk that cannot split -phase-teams
// (teams > 0) into chunks, before anything runs: MeasureConvergePhase
// refuses it too, but only after the phase tables, and the whole run and
// its report are lost.
func checkPhaseChunk(teams, chunk int) error {
	if teams > 0 && chunk <= 0 {
		return fmt.Errorf("-phase-chunk: %d Teams per chunk of -phase-teams %d (want at least 1)", chunk, teams)
	}
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

func machine() harness.Machine {
	m := harness.Machine{
		CPUs:       runtime.NumCPU(),
		GoVersion:  runtime.Version(),
		OS:         runtime.GOOS + "/" + runtime.GOARCH,
		LoadBefore: loadavg(),
		Date:       time.Now(),
		CPUModel:   "unknown",
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "sigs.k8s.io/controller-runtime", "k8s.io/client-go", "k8s.io/apimachinery", "sigs.k8s.io/cluster-api":
				v := d.Version
				if d.Replace != nil {
					v += " => " + d.Replace.Version
				}
				m.Versions = append(m.Versions, [2]string{d.Path, v})
			case "github.com/steadyk8s/steady":
				m.Versions = append(m.Versions, [2]string{d.Path, "this checkout (replace => ../)"})
			}
		}
	}
	return m
}

func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// writeReport writes rep's report to out, or to stdout for "-".
func writeReport(rep harness.Report, out string) error {
	var w io.Writer = os.Stdout
	if out != "-" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	if err := rep.Write(w); err != nil {
		return err
	}
	if out != "-" {
		abs, _ := filepath.Abs(out)
		logf("wrote %s", abs)
	}
	return nil
}

// Package harness runs the benchmark's Team operator variants against a
// control plane, one after the other, phase by phase, and measures each
// phase: requests by verb, resource and status code (with their bytes),
// conflicts, controller-runtime's reconcile counters, wall time, the
// process's CPU time and its heap.
package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	rtmetrics "runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	benchv1 "github.com/steadyk8s/steady/bench/api/v1alpha1"
	"github.com/steadyk8s/steady/bench/operator"
)

// The phases, in the order they run.
const (
	// PhaseConverge creates N Teams and waits until every one is Ready with
	// observedGeneration = generation and its three children as wanted.
	PhaseConverge = "converge"
	// PhaseTouch touches every owner (an annotation the operator does not
	// own) and every child (its bench.steady.dev/team label set to a wrong
	// value) and waits until every child is repaired.
	PhaseTouch = "touch"
	// PhaseNoop triggers 2N reconciles (two rounds of one event per Team,
	// through a channel source) while nothing changed.
	PhaseNoop = "no-op"
	// PhaseDelete deletes every Team and waits until the Teams and their
	// children (collected by the garbage collector) are gone.
	PhaseDelete = "delete"
)

// Phases lists the phases in order.
var Phases = []string{PhaseConverge, PhaseTouch, PhaseNoop, PhaseDelete}

// TouchedAnnotation is the annotation PhaseTouch sets on every Team.
const TouchedAnnotation = "bench.steady.dev/touched"

// TamperedValue is the value PhaseTouch sets the team label of every child to.
const TamperedValue = "tampered"

// Config configures one run of one variant.
type Config struct {
	// RESTConfig reaches the API server (an admin of the control plane).
	RESTConfig *rest.Config
	// N is the number of Teams.
	N int
	// Run numbers the run, for names.
	Run int
	// Workers is each controller's MaxConcurrentReconciles; 0 means 1.
	Workers int
	// IdleWindow is how long a controller must stay idle (nothing running
	// or queued, no reconcile and no request) for a phase to end; 0 means
	// 500ms.
	IdleWindow time.Duration
	// Timeout bounds each phase; 0 means 60s + 150ms per Team.
	Timeout time.Duration
	// WatchDelay holds back every watch event of the manager by this long:
	// its cache lags behind the API server, as on a loaded cluster.
	WatchDelay time.Duration
	// ProfileDir, when set, receives a CPU profile of each variant's
	// ProfilePhase, as <variant>-<phase>-n<N>.pprof, and a heap profile
	// taken after the phase (after a GC), as <variant>-<phase>-n<N>.heap.
	ProfileDir   string
	ProfilePhase string
	// Logf, when set, reports progress.
	Logf func(format string, args ...any)
}

// PhaseResult is what one phase of one variant cost.
type PhaseResult struct {
	Phase string
	// Wall is the time from the phase's first action until the state was
	// reached (as the manager's cache shows it).
	Wall time.Duration
	// Settle is the time from the phase's first action until the
	// controller was idle again; the counts and CPU are taken then.
	Settle time.Duration
	// CPU is the process's user and system CPU time over Settle: the
	// manager, and the harness's own writes and checks.
	CPU time.Duration
	// CheckTime is the wall time of the harness's convergence checks
	// (reads of the manager's cache).
	CheckTime time.Duration
	// CheckCPU is the CPU time of those checks: each runs on a locked OS
	// thread whose CPU time (CLOCK_THREAD_CPUTIME_ID) is read before and
	// after, so it counts the checks' own work and their GC assists, not
	// the background GC their garbage costs later.
	CheckCPU time.Duration
	// GCCPU is the Go runtime's estimate of the CPU time its garbage
	// collector spent in the phase (runtime/metrics
	// /cpu/classes/gc/total:cpu-seconds), part of CPU: what the phase's
	// allocations cost beyond making them.
	GCCPU time.Duration
	// ControlPlaneCPU is the CPU time each of the control plane's processes
	// ([ControlPlane]: kube-apiserver, etcd) spent over Settle, keyed by
	// process name; empty where it cannot be read. It is what the phase
	// cost the server side: the manager's requests and watches, and the
	// harness's and the garbage collector's, which are alike for every
	// variant.
	ControlPlaneCPU map[string]time.Duration `json:",omitempty"`
	// Counts are the manager's requests.
	Counts Counts
	// Reconciles are controller-runtime's reconcile counters.
	Reconciles Reconciles
	// PeakHeap is the largest heap (HeapAlloc: live and garbage) sampled
	// every 2ms; LiveHeap the heap after a GC at the end of the phase.
	PeakHeap, LiveHeap uint64
	// Repeats is the number of times the phase ran when it ran more than
	// once (the no-op phase, NoopRepeats): its times, CPU and heap are
	// then the medians of the repetitions', its Counts and Reconciles
	// their sums.
	Repeats int `json:",omitempty"`
}

// Result is one run of one variant.
type Result struct {
	Variant string
	Setup
	Run    int
	Phases []PhaseResult
}

// Setup is what a run was run with: the number of Teams, the lag of the
// manager's cache and the controller's workers.
type Setup struct {
	N          int
	WatchDelay time.Duration
	Workers    int
}

// String is "N = 100", or "N = 100, cache 200ms behind, 2 workers".
func (s Setup) String() string {
	out := fmt.Sprintf("N = %d", s.N)
	if s.WatchDelay > 0 {
		out += fmt.Sprintf(", cache %s behind", s.WatchDelay)
	}
	if s.Workers > 1 {
		out += fmt.Sprintf(", %d workers", s.Workers)
	}
	return out
}

// Phase returns the result of the phase named name.
func (r Result) Phase(name string) PhaseResult {
	for _, p := range r.Phases {
		if p.Phase == name {
			return p
		}
	}
	return PhaseResult{Phase: name}
}

// NewScheme returns a scheme with client-go's types and the Team.
func NewScheme() *kruntime.Scheme {
	s := kruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(benchv1.AddToScheme(s))
	return s
}

// runner is one run of one variant.
type runner struct {
	cfg      Config
	variant  string
	name     string // controller name
	ns       string
	scheme   *kruntime.Scheme
	driver   client.Client // direct, not counted
	mgr      ctrl.Manager
	counter  *Counter
	tally    *tally
	trigger  chan event.GenericEvent
	names    []string
	tampered map[types.NamespacedName]uint64 // child (kind-less key by kind prefix) -> resourceVersion of the tampering
	mirror   *mirror                         // the Teams and children of the manager's cache, by event
	poll     mirrorPoll                      // of the mirror, from poll to poll
	verdicts verdicts                        // of the convergence checks of the current phase
	checkDur time.Duration
	checkCPU time.Duration
}

// RunVariant runs the phases of variant on a manager of its own, in a
// namespace of its own, and stops the manager again.
func RunVariant(ctx context.Context, cfg Config, variant string) (Result, error) {
	res := Result{Variant: variant, Setup: Setup{N: cfg.N, WatchDelay: cfg.WatchDelay, Workers: max(cfg.Workers, 1)}, Run: cfg.Run}
	r, stop, err := start(ctx, cfg, variant)
	if err != nil {
		return res, err
	}
	defer stop()
	for _, phase := range Phases {
		r.cfg.Logf("%s n=%d run %d: %s", variant, cfg.N, cfg.Run, phase)
		reps := 1
		if phase == PhaseNoop {
			reps = NoopRepeats
		}
		var prs []PhaseResult
		for range reps {
			pr, err := r.phase(ctx, phase)
			prs = append(prs, pr)
			if err != nil {
				res.Phases = append(res.Phases, medianPhase(prs))
				return res, fmt.Errorf("%s n=%d run %d, phase %s: %w", variant, cfg.N, cfg.Run, phase, err)
			}
		}
		res.Phases = append(res.Phases, medianPhase(prs))
	}
	return res, nil
}

// NoopRepeats is how many times RunVariant runs the no-op phase. The phase
// is short (2N reconciles, about 0.15s at N = 1000), so that anything else
// the machine does meanwhile (the control plane's own periodic work, say)
// can double its wall time and move its heap peak by a third; the median
// of several repetitions is not moved by one such burst.
const NoopRepeats = 5

// medianPhase combines repetitions of one phase: each time, CPU and heap
// figure is the median of the repetitions' (the lower middle one for an
// even count), the request counts and reconciles are their sums, and
// Repeats is their number. One repetition is returned as it is.
func medianPhase(prs []PhaseResult) PhaseResult {
	if len(prs) == 1 {
		return prs[0]
	}
	out := PhaseResult{Phase: prs[0].Phase, Repeats: len(prs), Counts: Counts{}}
	out.Wall = median(prs, func(p PhaseResult) time.Duration { return p.Wall })
	out.Settle = median(prs, func(p PhaseResult) time.Duration { return p.Settle })
	out.CPU = median(prs, func(p PhaseResult) time.Duration { return p.CPU })
	out.CheckTime = median(prs, func(p PhaseResult) time.Duration { return p.CheckTime })
	out.CheckCPU = median(prs, func(p PhaseResult) time.Duration { return p.CheckCPU })
	out.GCCPU = median(prs, func(p PhaseResult) time.Duration { return p.GCCPU })
	out.PeakHeap = median(prs, func(p PhaseResult) uint64 { return p.PeakHeap })
	out.LiveHeap = median(prs, func(p PhaseResult) uint64 { return p.LiveHeap })
	// A control plane process's CPU is the median of the repetitions that
	// measured it: one whose /proc entry could not be read is not 0s.
	measured := map[string][]time.Duration{}
	for _, p := range prs {
		for name, cpu := range p.ControlPlaneCPU {
			measured[name] = append(measured[name], cpu)
		}
		out.Counts = out.Counts.Add(p.Counts)
		out.Reconciles = out.Reconciles.Add(p.Reconciles)
	}
	for name, cpus := range measured {
		if out.ControlPlaneCPU == nil {
			out.ControlPlaneCPU = map[string]time.Duration{}
		}
		out.ControlPlaneCPU[name] = middle(cpus)
	}
	return out
}

// median is the median of f over prs: the middle value, the lower of the
// two middle ones for an even count.
func median[T cmp.Ordered](prs []PhaseResult, f func(PhaseResult) T) T {
	vs := make([]T, len(prs))
	for i, p := range prs {
		vs[i] = f(p)
	}
	return middle(vs)
}

// middle sorts vs and returns its median, the lower of the two middle
// values for an even count.
func middle[T cmp.Ordered](vs []T) T {
	slices.Sort(vs)
	return vs[(len(vs)-1)/2]
}

// start starts variant's runner (start1) with the variant's profiler label
// on every goroutine it starts: the manager's (its controller's workers,
// informers, clients and their connections) and the harness's driver's
// connection, so that a CPU profile of the process tells the variants
// apart (go tool pprof -tagfocus variant=steady); the runtime's garbage
// collector and the caller's own goroutine carry none.
func start(ctx context.Context, cfg Config, variant string) (r *runner, stop func(), err error) {
	pprof.Do(ctx, pprof.Labels("variant", variant), func(ctx context.Context) { r, stop, err = start1(ctx, cfg, variant) })
	return r, stop, err
}

// start1 makes the namespace and starts the manager of variant; stop stops
// the manager and deletes the namespace (without waiting).
func start1(ctx context.Context, cfg Config, variant string) (_ *runner, stop func(), _ error) {
	if cfg.Workers == 0 {
		cfg.Workers = 1
	}
	if cfg.IdleWindow == 0 {
		cfg.IdleWindow = 500 * time.Millisecond
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 60*time.Second + time.Duration(cfg.N)*150*time.Millisecond
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	r := &runner{
		cfg:      cfg,
		variant:  variant,
		name:     fmt.Sprintf("team-%s-n%d-w%d-l%d-r%d", variant, cfg.N, cfg.Workers, cfg.WatchDelay.Milliseconds(), cfg.Run),
		scheme:   NewScheme(),
		counter:  &Counter{},
		tally:    &tally{},
		trigger:  make(chan event.GenericEvent),
		tampered: map[types.NamespacedName]uint64{},
		mirror:   newMirror(cfg.N + 8), // and the namespace's own: kube-root-ca.crt, default
	}
	r.ns = r.name
	var err error
	if r.driver, err = client.New(rest.CopyConfig(cfg.RESTConfig), client.Options{Scheme: r.scheme}); err != nil {
		return nil, nil, err
	}
	if err := r.driver.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns}}); err != nil {
		return nil, nil, fmt.Errorf("creating namespace %s: %w", r.ns, err)
	}
	deleteNamespace := func() {
		// Not waited for: the namespace controller empties it later.
		_ = r.driver.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns}})
	}
	for i := range cfg.N {
		r.names = append(r.names, fmt.Sprintf("team-%04d", i))
	}
	stopManager, err := r.startManager(ctx)
	if err != nil {
		deleteNamespace()
		return nil, nil, err
	}
	return r, func() { stopManager(); deleteNamespace() }, nil
}

func (r *runner) startManager(ctx context.Context) (func(), error) {
	rc := rest.CopyConfig(r.cfg.RESTConfig)
	rc.Wrap(r.counter.Wrap)
	if d := r.cfg.WatchDelay; d > 0 {
		rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return delayWatches(rt, d) })
	}
	mgr, err := ctrl.NewManager(rc, ctrl.Options{
		Scheme:  r.scheme,
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{r.ns: {}}},
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := operator.Setup(mgr, r.variant, operator.Options{
		Name: r.name, Trigger: r.trigger, MaxConcurrentReconciles: r.cfg.Workers,
		Wrap: func(rec crreconcile.Reconciler) crreconcile.Reconciler { r.tally.inner = rec; return r.tally },
	}); err != nil {
		return nil, err
	}
	r.mgr = mgr
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	stop := func() {
		cancel()
		<-done
	}
	// The mirror follows the informers from their start: its handlers are
	// called for every object the cache holds, and every change.
	var regs []toolscache.ResourceEventHandlerRegistration
	for kind, obj := range mirrorKinds() {
		inf, err := mgr.GetCache().GetInformer(mctx, obj)
		if err != nil {
			stop()
			return nil, fmt.Errorf("starting the informer of %T: %w", obj, err)
		}
		reg, err := inf.AddEventHandler(r.mirror.handler(kind))
		if err != nil {
			stop()
			return nil, fmt.Errorf("adding the mirror's handler to the informer of %T: %w", obj, err)
		}
		regs = append(regs, reg)
	}
	if !mgr.GetCache().WaitForCacheSync(mctx) {
		stop()
		return nil, errors.New("the manager's cache did not sync")
	}
	for _, reg := range regs {
		for !reg.HasSynced() {
			select {
			case <-mctx.Done():
				stop()
				return nil, fmt.Errorf("the mirror's handlers did not sync: %w", mctx.Err())
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	if err := r.waitIdle(ctx); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// measurement is the state at the start of a phase.
type measurement struct {
	start      time.Time
	cpu        time.Duration
	gc         time.Duration
	server     map[string]time.Duration
	counts     Counts
	reconciles Reconciles
	peak       uint64
	stopHeap   func() uint64
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// gcCPU is the runtime's estimate of the CPU time its garbage collector has
// spent since the process started.
func gcCPU() time.Duration {
	s := []rtmetrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	rtmetrics.Read(s)
	if s[0].Value.Kind() != rtmetrics.KindFloat64 {
		return 0
	}
	return time.Duration(s[0].Value.Float64() * float64(time.Second))
}

// heapPeriod is how often sampleHeap reads the heap. A GC cycle at
// these heap sizes comes every few milliseconds in a busy phase; a coarser
// period misses most of the saw's teeth (at 50ms the no-op phase, 0.2s
// long, was three samples, and its peak varied by 1.7 times between runs).
const heapPeriod = 2 * time.Millisecond

// heapObjects is the runtime/metrics name of HeapAlloc: the bytes of heap
// objects, live and not yet swept. Reading it does not stop the world, as
// runtime.ReadMemStats does.
const heapObjects = "/memory/classes/heap/objects:bytes"

// sampleHeap samples HeapAlloc every heapPeriod until the returned
// function is called, which returns the largest sample.
func sampleHeap() func() uint64 {
	var (
		mu   sync.Mutex
		peak uint64
	)
	samples := []rtmetrics.Sample{{Name: heapObjects}}
	sample := func() {
		mu.Lock()
		defer mu.Unlock()
		rtmetrics.Read(samples)
		if samples[0].Value.Kind() == rtmetrics.KindUint64 {
			peak = max(peak, samples[0].Value.Uint64())
		}
	}
	sample()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(heapPeriod)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		sample()
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

func (r *runner) phase(ctx context.Context, phase string) (PhaseResult, error) {
	pr := PhaseResult{Phase: phase}
	runtime.GC()
	var stopProfile func()
	if r.cfg.ProfileDir != "" && r.cfg.ProfilePhase == phase {
		f, err := os.Create(filepath.Join(r.cfg.ProfileDir, fmt.Sprintf("%s-%s-n%d.pprof", r.variant, phase, r.cfg.N)))
		if err != nil {
			return pr, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return pr, err
		}
		stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
	}
	m := measurement{start: time.Now(), cpu: cpuTime(), gc: gcCPU(), server: controlPlaneCPU(), counts: r.counter.Snapshot(), reconciles: r.tally.read(), stopHeap: sampleHeap()}
	r.checkDur, r.checkCPU = 0, 0
	r.resetChecks(false)

	var act error
	switch phase {
	case PhaseConverge:
		act = r.converge(ctx, r.names)
	case PhaseTouch:
		act = r.touch(ctx)
	case PhaseNoop:
		act = r.noop(ctx)
	case PhaseDelete:
		act = r.delete(ctx)
	}
	pr.Wall = time.Since(m.start)
	idleErr := r.waitIdle(ctx)
	pr.Settle = time.Since(m.start)
	pr.CPU = cpuTime() - m.cpu
	pr.GCCPU = gcCPU() - m.gc
	if server := controlPlaneCPU(); server != nil && m.server != nil {
		pr.ControlPlaneCPU = map[string]time.Duration{}
		for name, cpu := range server {
			pr.ControlPlaneCPU[name] = cpu - m.server[name]
		}
	}
	pr.PeakHeap = m.stopHeap()
	if stopProfile != nil {
		stopProfile()
	}
	pr.Counts = r.counter.Snapshot().Sub(m.counts)
	pr.Reconciles = r.tally.read().Sub(m.reconciles)
	pr.CheckTime, pr.CheckCPU = r.checkDur, r.checkCPU
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	pr.LiveHeap = ms.HeapAlloc
	if r.cfg.ProfileDir != "" && r.cfg.ProfilePhase == phase {
		// What the live heap holds, after the GC above.
		if err := writeHeapProfile(filepath.Join(r.cfg.ProfileDir, fmt.Sprintf("%s-%s-n%d.heap", r.variant, phase, r.cfg.N))); err != nil {
			return pr, err
		}
	}
	if act != nil || idleErr != nil {
		return pr, errors.Join(act, idleErr)
	}
	return pr, r.verify(ctx, phase)
}

// waitIdle waits until the controller has had no reconcile running, none
// started or finished and no request sent (watches aside) for IdleWindow:
// an idle worker takes a queued item at once, so nothing is queued either
// (but for a retry whose backoff outlasts the window).
func (r *runner) waitIdle(ctx context.Context) error {
	deadline := time.Now().Add(r.cfg.Timeout)
	for {
		last := max(r.tally.last.Load(), r.counter.last.Load())
		now := time.Now()
		if r.tally.inflight.Load() == 0 && now.Sub(time.Unix(0, last)) >= r.cfg.IdleWindow {
			return nil
		}
		if now.After(deadline) {
			return fmt.Errorf("controller %s not idle after %s", r.name, r.cfg.Timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitFor calls check every interval until it returns "" (done), and
// fails with its last answer after the timeout.
func (r *runner) waitFor(ctx context.Context, interval time.Duration, check func(context.Context) (string, error)) error {
	deadline := time.Now().Add(r.cfg.Timeout)
	for {
		why, err := r.measureCheck(ctx, check)
		if err != nil {
			return err
		}
		if why == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not after %s: %s", r.cfg.Timeout, why)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// measureCheck runs check on a locked OS thread and adds its wall time to
// checkDur and the thread's CPU time to checkCPU.
func (r *runner) measureCheck(ctx context.Context, check func(context.Context) (string, error)) (string, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0, c0 := time.Now(), threadCPUTime()
	why, err := check(ctx)
	r.checkCPU += threadCPUTime() - c0
	r.checkDur += time.Since(t0)
	return why, err
}

// threadCPUTime is the CPU time of the calling OS thread.
func threadCPUTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// checkInterval is how often the state is checked in the manager's cache:
// 20ms, and 50µs more per Team (as when a check listed every Team and
// child; kept, so that the wall times stay comparable).
func (r *runner) checkInterval() time.Duration {
	return 20*time.Millisecond + time.Duration(len(r.names))*50*time.Microsecond
}

// parallel runs f for every name of names on 16 goroutines.
func (r *runner) parallel(ctx context.Context, names []string, f func(ctx context.Context, name string) error) error {
	work := make(chan string)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range 16 {
		wg.Go(func() {
			for name := range work {
				if err := f(ctx, name); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, n := range names {
		work <- n
	}
	close(work)
	wg.Wait()
	return errors.Join(errs...)
}

func (r *runner) newTeam(name string) *benchv1.Team {
	return &benchv1.Team{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: name, Labels: map[string]string{benchv1.VariantLabel: r.variant}},
		Spec:       benchv1.TeamSpec{Members: []string{name + "-lead", name + "-dev", name + "-ops"}},
	}
}

// converge creates the Teams named in create and waits until every Team
// of r.names (create among them) has converged in the manager's cache.
func (r *runner) converge(ctx context.Context, create []string) error {
	if err := r.parallel(ctx, create, func(ctx context.Context, name string) error {
		return r.driver.Create(ctx, r.newTeam(name))
	}); err != nil {
		return err
	}
	return r.waitFor(ctx, r.checkInterval(), func(context.Context) (string, error) {
		return r.watchedConverged(false), nil
	})
}

func rv(obj client.Object) uint64 {
	v, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	return v
}

func childKey(kind, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: kind, Name: name}
}

func (r *runner) touch(ctx context.Context) error {
	var mu sync.Mutex
	annotate := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+TouchedAnnotation+`":"1"}}}`))
	tamper := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+benchv1.TeamLabel+`":"`+TamperedValue+`"}}}`))
	if err := r.parallel(ctx, r.names, func(ctx context.Context, name string) error {
		key := client.ObjectKey{Namespace: r.ns, Name: name}
		if err := r.driver.Patch(ctx, &benchv1.Team{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}, annotate); err != nil {
			return err
		}
		for kind, obj := range map[string]client.Object{
			"ConfigMap":      &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}},
			"ServiceAccount": &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}},
			"RoleBinding":    &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}},
		} {
			if err := r.driver.Patch(ctx, obj, tamper); err != nil {
				return err
			}
			mu.Lock()
			r.tampered[childKey(kind, name)] = rv(obj)
			mu.Unlock()
		}
		return nil
	}); err != nil {
		return err
	}
	r.resetChecks(true) // the tampered versions changed
	return r.waitFor(ctx, r.checkInterval(), func(context.Context) (string, error) {
		return r.watchedConverged(true), nil
	})
}

// noop sends one event per Team, twice, each round once the controller is
// idle, so that every event is a reconcile of its own.
func (r *runner) noop(ctx context.Context) error {
	before := r.tally.read().Total
	for round := 1; round <= 2; round++ {
		for _, name := range r.names {
			select {
			case r.trigger <- event.GenericEvent{Object: &benchv1.Team{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: name}}}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		want := int64(round * len(r.names))
		if err := r.waitFor(ctx, 2*time.Millisecond, func(context.Context) (string, error) {
			if done := r.tally.total.Load() - before; done < want || r.tally.inflight.Load() > 0 {
				return fmt.Sprintf("%d of %d reconciles done", done, want), nil
			}
			return "", nil
		}); err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) delete(ctx context.Context) error {
	if err := r.parallel(ctx, r.names, func(ctx context.Context, name string) error {
		return client.IgnoreNotFound(r.driver.Delete(ctx, &benchv1.Team{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: name}}))
	}); err != nil {
		return err
	}
	return r.waitFor(ctx, r.checkInterval(), func(context.Context) (string, error) { return r.watchedGone(), nil })
}

// verify checks, through the API server, the state a phase reached: with
// Lists, in full, without the mirror nor the verdicts, so that a bug of
// theirs cannot hide a wrong state.
func (r *runner) verify(ctx context.Context, phase string) error {
	var why string
	var err error
	if phase == PhaseDelete {
		why, err = r.gone(ctx, r.driver)
	} else {
		why, err = r.converged(ctx, r.driver, phase != PhaseConverge)
	}
	if err == nil && why != "" {
		err = fmt.Errorf("the API server does not hold the state the cache showed: %s", why)
	}
	return err
}

// writeHeapProfile writes the heap profile (live objects as of the last
// GC, and what was allocated since the start) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(pprof.Lookup("heap").WriteTo(f, 0), f.Close())
}

package soak

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"

	"github.com/steadyk8s/steady/testenv"
)

// LeaseName is the Lease (in [Namespace]) the replicas elect their leader
// with.
const LeaseName = "steady-soak"

// replica is one manager of the five operators, one pod of the operator's
// Deployment as it were.
type replica struct {
	n       int
	mgr     ctrl.Manager
	cancel  context.CancelFunc
	stopped atomic.Bool // set when it is killed or stopped on purpose
	cut     atomic.Bool // its transport refuses every request: the process is gone
	elected atomic.Bool
	done    chan struct{}
}

// transport fails every request once the replica is cut, as a process
// that died sends nothing more.
func (r *replica) transport(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if r.cut.Load() {
			return nil, fmt.Errorf("soak: replica %d is dead", r.n)
		}
		return rt.RoundTrip(req)
	})
}

// replicas runs the operator's replicas with leader election and
// restarts one that exits on a lost lease, as the kubelet restarts a pod
// whose container exited.
type replicas struct {
	env  *testenv.Environment
	opts func(*replica) []testenv.ManagerOption
	log  *eventLog

	mu       sync.Mutex
	all      []*replica
	next     int
	stopping bool
	wg       sync.WaitGroup
	failures []string // replicas that stopped with an unexpected error
	// elections counts the replicas elected; leasesLost the replicas that
	// exited because they could not renew the lease.
	elections, leasesLost int
}

func newReplicas(env *testenv.Environment, cfg Config, s *state, log *eventLog, setup func(ctrl.Manager) error) *replicas {
	rs := &replicas{env: env, log: log}
	rs.opts = func(r *replica) []testenv.ManagerOption {
		return []testenv.ManagerOption{
			// The request counter sees the operators' own requests, not the
			// lease renewals that keep a leader elected.
			testenv.WithTransport(func(rt http.RoundTripper) http.RoundTripper {
				return s.counter.wrapExceptLeases(r.n, s.faults.wrap(r.transport(rt)))
			}),
			testenv.WithWatchDelay(cfg.WatchDelay),
			testenv.WithManagerOptions{
				// Three workers on the rate-limited queue: v0.24's priority
				// queue can hang a replica's stop (docs/compatibility.md).
				Controller:              config.Controller{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: 3, UsePriorityQueue: ptr.To(false)},
				LeaderElection:          true,
				LeaderElectionID:        LeaseName,
				LeaderElectionNamespace: Namespace,
				LeaseDuration:           ptr.To(cfg.LeaseDuration),
				RenewDeadline:           ptr.To(cfg.RenewDeadline),
				RetryPeriod:             ptr.To(cfg.RetryPeriod),
				// Not released on cancel: a killed leader leaves its lease
				// to expire, as a crashed process does.
				LeaderElectionReleaseOnCancel: false,
			},
			testenv.WithSetup(setup),
		}
	}
	return rs
}

// start starts one more replica; why is logged with it.
func (rs *replicas) start(why string) error {
	rs.mu.Lock()
	if rs.stopping {
		rs.mu.Unlock()
		return nil
	}
	rs.next++
	r := &replica{n: rs.next, done: make(chan struct{})}
	rs.mu.Unlock()
	// Setting up talks to the API server (discovery, for the indexes)
	// through the faults: a replica that fails to start is started again,
	// as the kubelet restarts a container that exited.
	var mgr ctrl.Manager
	var err error
	for try := 1; ; try++ {
		if mgr, err = rs.env.NewManager(rs.opts(r)...); err == nil {
			break
		}
		if try == 5 {
			return fmt.Errorf("replica %d could not start in %d tries: %w", r.n, try, err)
		}
		rs.log.add("replica %d could not start (%v); trying again", r.n, err)
		time.Sleep(time.Second)
	}
	r.mgr = mgr
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	rs.mu.Lock()
	rs.all = append(rs.all, r)
	rs.mu.Unlock()
	rs.log.add("replica %d started (%s)", r.n, why)
	rs.wg.Go(func() {
		select {
		case <-mgr.Elected():
			r.elected.Store(true)
			rs.mu.Lock()
			rs.elections++
			rs.mu.Unlock()
			rs.log.add("replica %d elected leader", r.n)
		case <-ctx.Done():
		}
	})
	rs.wg.Go(func() {
		defer close(r.done)
		err := mgr.Start(ctx)
		r.cut.Store(true) // whatever it left running sends nothing more
		if r.stopped.Load() {
			return
		}
		cancel()
		if err != nil && strings.Contains(err.Error(), "leader election lost") {
			rs.mu.Lock()
			rs.leasesLost++
			rs.mu.Unlock()
			rs.log.add("replica %d could not renew its lease and exited", r.n)
			if err := rs.start(fmt.Sprintf("in place of replica %d", r.n)); err != nil {
				rs.fail(err.Error())
			}
			return
		}
		rs.fail(fmt.Sprintf("replica %d stopped by itself: %v", r.n, err))
	})
	return nil
}

func (rs *replicas) fail(msg string) {
	rs.mu.Lock()
	rs.failures = append(rs.failures, msg)
	rs.mu.Unlock()
}

// leader returns the replica that is elected and running, or nil.
func (rs *replicas) leader() *replica {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.all {
		if r.elected.Load() && !r.cut.Load() {
			return r
		}
	}
	return nil
}

// waitLeader waits for a live leader, for at most d, and returns it, or
// nil.
func (rs *replicas) waitLeader(d time.Duration) *replica {
	deadline := time.Now().Add(d)
	for {
		if r := rs.leader(); r != nil || time.Now().After(deadline) {
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill kills the leader: its transport is cut, as a process that died
// sends nothing more, and its context cancelled without releasing the
// lease.
func (rs *replicas) kill(r *replica) {
	r.stopped.Store(true)
	r.cut.Store(true)
	r.cancel()
	<-r.done
	rs.log.add("replica %d, the leader, killed", r.n)
}

// stop stops every replica and waits for them.
func (rs *replicas) stop() {
	rs.mu.Lock()
	rs.stopping = true
	all := rs.all
	rs.mu.Unlock()
	for _, r := range all {
		r.stopped.Store(true)
		r.cancel()
	}
	rs.wg.Wait()
}

// disrupt kills the leader and restarts the API server, in turn, spread
// over d: after a kill it starts a new standby and waits for another
// replica to take the lease over.
func (s *state) disrupt(ctx context.Context, env *testenv.Environment, rs *replicas, cfg Config, d time.Duration, report *Report) {
	n := cfg.LeaderKills + cfg.APIServerRestarts
	start := time.Now()
	kills, restarts := 0, 0
	for i := range n {
		if wait := time.Until(start.Add(d * time.Duration(i+1) / time.Duration(n+1))); wait > 0 {
			time.Sleep(wait)
		}
		if kills < cfg.LeaderKills && (i%2 == 0 || restarts >= cfg.APIServerRestarts) {
			kills++
			leader := rs.waitLeader(takeoverBound(cfg))
			if leader == nil {
				s.log.violation("no replica elected leader within %s, so none could be killed", takeoverBound(cfg))
				continue
			}
			killed := time.Now()
			rs.kill(leader)
			if err := rs.start(fmt.Sprintf("standby in place of replica %d", leader.n)); err != nil {
				s.log.violation("%v", err)
			}
			if rs.waitLeader(takeoverBound(cfg)) == nil {
				s.log.violation("no replica took the lease over within %s of the leader's kill", takeoverBound(cfg))
				continue
			}
			report.Takeovers = append(report.Takeovers, time.Since(killed))
			continue
		}
		restarts++
		stopped := time.Now()
		s.log.add("kube-apiserver stopped")
		err := env.StopAPIServer()
		if err == nil {
			err = env.StartAPIServer(ctx)
		}
		if err != nil {
			s.log.violation("restarting the kube-apiserver: %v", err)
			continue
		}
		report.APIServerDowntime = append(report.APIServerDowntime, time.Since(stopped))
		s.log.add("kube-apiserver ready again on the same etcd, address and certificates; a new kube-controller-manager ready")
	}
}

// takeoverBound is how long a standby may take to be elected: the lease
// has to expire first, and a loaded machine adds some.
func takeoverBound(cfg Config) time.Duration { return 4*cfg.LeaseDuration + 30*time.Second }

// eventLog records what happened to the replicas and the API server, with
// the time since the run began, and what went wrong on the way.
type eventLog struct {
	start      time.Time
	mu         sync.Mutex
	events     []string
	violations []string
}

func (l *eventLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, fmt.Sprintf("%6.1fs %s", time.Since(l.start).Seconds(), fmt.Sprintf(format, args...)))
}

func (l *eventLog) violation(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.add("%s", msg)
	l.mu.Lock()
	l.violations = append(l.violations, msg)
	l.mu.Unlock()
}

// counter counts the replicas' requests, leaving out the lease's, and
// keeps a line for each write since its last reset, naming the replica,
// the request, its answer and the start of its body: a write in the
// quiet window is reported as what it was, not only as a count.
type counter struct {
	testenv.RequestCounter
	mu     sync.Mutex
	writes []string
	// accepted are the lines of the writes the API server accepted (2xx).
	accepted []string
}

func (c *counter) wrapExceptLeases(replica int, rt http.RoundTripper) http.RoundTripper {
	counted := c.Wrap(rt)
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		if strings.HasPrefix(r.URL.Path, "/apis/coordination.k8s.io/") {
			return rt.RoundTrip(r)
		}
		if !isWrite(r) {
			return counted.RoundTrip(r)
		}
		body := requestBody(r)
		resp, err := counted.RoundTrip(r)
		answer, ok := "", false
		if err != nil {
			answer = err.Error()
		} else {
			answer, ok = resp.Status, resp.StatusCode < 300
		}
		line := fmt.Sprintf("replica %d: %s %s -> %s %s", replica, r.Method, r.URL.Path, answer, body)
		c.mu.Lock()
		c.writes = append(c.writes, line)
		if ok {
			c.accepted = append(c.accepted, line)
		}
		c.mu.Unlock()
		return resp, err
	})
}

// Reset forgets what was counted and the writes it kept.
func (c *counter) Reset() {
	c.RequestCounter.Reset()
	c.mu.Lock()
	c.writes, c.accepted = nil, nil
	c.mu.Unlock()
}

// WriteLines returns a line for each write since the last reset.
func (c *counter) WriteLines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.writes...)
}

// AcceptedLines returns a line for each write since the last reset that
// the API server accepted.
func (c *counter) AcceptedLines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.accepted...)
}

func isWrite(r *http.Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return !strings.Contains(r.URL.RawQuery, "dryRun=All")
	}
	return false
}

// requestBody returns the start of r's body, read through GetBody so that
// the request keeps its own.
func requestBody(r *http.Request) string {
	if r.GetBody == nil {
		return ""
	}
	rc, err := r.GetBody()
	if err != nil {
		return ""
	}
	defer rc.Close()
	b, _ := io.ReadAll(io.LimitReader(rc, 4000))
	if !utf8.Valid(b) || strings.ContainsFunc(string(b), func(r rune) bool { return !unicode.IsPrint(r) }) {
		return fmt.Sprintf("(%s, %d bytes or more)", r.Header.Get("Content-Type"), len(b))
	}
	return string(b)
}

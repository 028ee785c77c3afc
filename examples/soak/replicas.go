package soak

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/steadyk8s/steady/examples/bucket"
	"github.com/steadyk8s/steady/testenv"
)

// LeaseName is the Lease (in [Namespace]) the replicas elect their leader
// with.
const LeaseName = "steady-soak"

// replica is one process of the five operators, one pod of the
// operator's Deployment as it were: this binary started again with
// [replicaEnv] set, reaching the API server through a [testenv.Proxy] of
// its own (the faults, the watch delay, the request counter).
type replica struct {
	n       int
	cmd     *exec.Cmd
	proxy   *testenv.Proxy
	stopped atomic.Bool // set when it is killed or stopped on purpose
	elected atomic.Bool
	started atomic.Bool                 // its start-up writes are done
	cache   atomic.Pointer[remoteCache] // once the process says where
	stderr  *tail
	done    chan struct{} // closed once the process has exited and its proxy is closed
	exitErr error         // cmd.Wait's, once done is closed
}

// replicas runs the operator's replicas with leader election and
// restarts one that exits on a lost lease, as the kubelet restarts a pod
// whose container exited.
type replicas struct {
	env  *testenv.Environment
	cfg  func(n int, proxy *testenv.Proxy) replicaConfig
	wrap func(n int) func(http.RoundTripper) http.RoundTripper
	// watchDelay holds back every watch event of the replicas.
	watchDelay time.Duration
	log        *eventLog
	scheme     *k8sruntime.Scheme

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

func newReplicas(env *testenv.Environment, cfg Config, s *state, log *eventLog, s3 bucket.S3Config) *replicas {
	return &replicas{env: env, log: log, scheme: s.c.Scheme(), watchDelay: cfg.WatchDelay,
		// The request counter sees the operators' own requests, not the
		// lease renewals that keep a leader elected.
		wrap: func(n int) func(http.RoundTripper) http.RoundTripper {
			return func(rt http.RoundTripper) http.RoundTripper { return s.counter.wrapExceptLeases(n, s.faults.wrap(rt)) }
		},
		cfg: func(n int, proxy *testenv.Proxy) replicaConfig {
			return replicaConfig{N: n, Host: proxy.Config.Host, QPS: proxy.Config.QPS, Burst: proxy.Config.Burst, S3: s3,
				LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod}
		},
	}
}

// start starts one more replica process; why is logged with it.
func (rs *replicas) start(why string) error {
	rs.mu.Lock()
	if rs.stopping {
		rs.mu.Unlock()
		return nil
	}
	rs.next++
	r := &replica{n: rs.next, done: make(chan struct{}), stderr: &tail{}}
	rs.mu.Unlock()
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("replica %d: %w", r.n, err)
	}
	if r.proxy, err = rs.env.StartProxy(rs.wrap(r.n), testenv.DelayWatches(rs.watchDelay)); err != nil {
		return fmt.Errorf("replica %d: %w", r.n, err)
	}
	cfg, err := json.Marshal(rs.cfg(r.n, r.proxy))
	if err != nil {
		return errors.Join(err, r.proxy.Close())
	}
	r.cmd = exec.Command(self)
	r.cmd.Env = append(os.Environ(), replicaEnv+"="+string(cfg))
	r.cmd.Stderr = r.stderr
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		return errors.Join(err, r.proxy.Close())
	}
	if err := r.cmd.Start(); err != nil {
		return fmt.Errorf("replica %d: %w", r.n, errors.Join(err, r.proxy.Close()))
	}
	rs.mu.Lock()
	rs.all = append(rs.all, r)
	rs.mu.Unlock()
	rs.log.add("replica %d started, pid %d (%s)", r.n, r.cmd.Process.Pid, why)
	rs.wg.Go(func() {
		defer close(r.done)
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			word, rest, _ := strings.Cut(lines.Text(), " ")
			switch word {
			case lineCache:
				r.cache.Store(&remoteCache{url: rest, scheme: rs.scheme})
			case lineStarted:
				r.started.Store(true)
			case lineElected:
				r.elected.Store(true)
				rs.mu.Lock()
				rs.elections++
				rs.mu.Unlock()
				rs.log.add("replica %d elected leader", r.n)
			}
		}
		r.exitErr = r.cmd.Wait()
		if err := r.proxy.Close(); err != nil {
			rs.fail(fmt.Sprintf("replica %d: %v", r.n, err))
		}
		if strings.Contains(r.stderr.String(), "DATA RACE") {
			rs.fail(fmt.Sprintf("replica %d: the race detector found a data race:\n%s", r.n, r.stderr))
		}
		if r.stopped.Load() {
			return
		}
		var exit *exec.ExitError
		if errors.As(r.exitErr, &exit) && exit.ExitCode() == exitLeaseLost {
			rs.mu.Lock()
			rs.leasesLost++
			rs.mu.Unlock()
			rs.log.add("replica %d could not renew its lease and exited", r.n)
			if err := rs.start(fmt.Sprintf("in place of replica %d", r.n)); err != nil {
				rs.fail(err.Error())
			}
			return
		}
		rs.fail(fmt.Sprintf("replica %d exited by itself (%v): %s", r.n, r.exitErr, r.stderr))
	})
	return nil
}

func (rs *replicas) fail(msg string) {
	rs.mu.Lock()
	rs.failures = append(rs.failures, msg)
	rs.mu.Unlock()
}

// starting names the running replicas whose start-up writes (every
// replica applies the tenants' ClusterRoles as it starts) are not done
// yet, or returns "" when there are none.
func (rs *replicas) starting() string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var names []string
	for _, r := range rs.all {
		if !r.started.Load() && !r.stopped.Load() && !isDone(r.done) {
			names = append(names, fmt.Sprintf("replica %d", r.n))
		}
	}
	if len(names) == 0 {
		return ""
	}
	return strings.Join(names, ", ") + " not started yet (its start-up writes not done)"
}

// leader returns the replica that is elected and running, or nil.
func (rs *replicas) leader() *replica {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.all {
		if r.elected.Load() && !r.stopped.Load() && !isDone(r.done) {
			return r
		}
	}
	return nil
}

func isDone(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
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

// kill kills the leader's process with SIGKILL: it releases nothing (its
// lease stays until it expires), finishes no request and leaves whatever
// it was doing half done.
func (rs *replicas) kill(r *replica) {
	r.stopped.Store(true)
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.done
	rs.log.add("replica %d, the leader, killed (SIGKILL)", r.n)
}

// stopBound is how long a replica may take to exit after SIGTERM.
const stopBound = 30 * time.Second

// stop stops every replica with SIGTERM and waits for them: each must exit
// cleanly (code 0) within stopBound, as a pod must within its grace period.
func (rs *replicas) stop() {
	rs.mu.Lock()
	rs.stopping = true
	all := rs.all
	rs.mu.Unlock()
	var running []*replica // the ones this stop ends: the others were killed or exited on a lost lease
	for _, r := range all {
		if r.stopped.Swap(true) || isDone(r.done) {
			continue
		}
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		running = append(running, r)
	}
	for _, r := range running {
		select {
		case <-r.done:
		case <-time.After(stopBound):
			_ = r.cmd.Process.Signal(syscall.SIGKILL)
			<-r.done
			rs.fail(fmt.Sprintf("replica %d did not stop within %s of SIGTERM: %s", r.n, stopBound, r.stderr))
			continue
		}
		if r.exitErr != nil && !killed(r.exitErr) {
			rs.fail(fmt.Sprintf("replica %d stopped with %v: %s", r.n, r.exitErr, r.stderr))
		}
	}
	rs.wg.Wait()
}

// killed reports whether err is the exit of a process killed by SIGKILL
// (a replica the soak killed).
func killed(err error) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// tail keeps the last 8 KiB written to it: a replica's standard error.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - 8<<10; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// disrupt kills the leader, restarts the API server and kills etcd, in
// turn, spread over d: after a kill it starts a new standby and waits for
// another replica to take the lease over.
func (s *state) disrupt(ctx context.Context, env *testenv.Environment, rs *replicas, kinds []kind, cfg Config, d time.Duration, report *Report) {
	const kill, apiServer, etcd = "kill", "kube-apiserver", "etcd"
	var order []string
	left := map[string]int{kill: cfg.LeaderKills, apiServer: cfg.APIServerRestarts, etcd: cfg.EtcdRestarts}
	for len(order) < cfg.LeaderKills+cfg.APIServerRestarts+cfg.EtcdRestarts {
		for _, what := range []string{kill, apiServer, etcd} {
			if left[what] > 0 {
				left[what]--
				order = append(order, what)
			}
		}
	}
	start := time.Now()
	for i, what := range order {
		if wait := time.Until(start.Add(d * time.Duration(i+1) / time.Duration(len(order)+1))); wait > 0 {
			time.Sleep(wait)
		}
		switch what {
		case kill:
			leader := rs.waitLeader(takeoverBound(cfg))
			if leader == nil {
				s.log.violation("no replica elected leader within %s, so none could be killed", takeoverBound(cfg))
				continue
			}
			// Mid-churn: a burst of deletes the leader has just begun to
			// handle (finalizers to run, children to clean up).
			n := s.deleteBurst(ctx, kinds, cfg)
			s.log.add("a burst of %d owner deletes", n)
			time.Sleep(150 * time.Millisecond)
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
		case apiServer:
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
		case etcd:
			killed := time.Now()
			if err := env.KillEtcd(); err != nil {
				s.log.violation("killing etcd: %v", err)
				continue
			}
			s.log.add("etcd killed (SIGKILL)")
			time.Sleep(cfg.EtcdDowntime)
			if err := env.StartEtcd(ctx); err != nil {
				s.log.violation("starting etcd again: %v", err)
				continue
			}
			report.EtcdDowntime = append(report.EtcdDowntime, time.Since(killed))
			s.log.add("etcd started again on its data; the kube-apiserver ready")
		}
	}
}

// deleteBurst deletes every owner of the soak at once, from as many
// goroutines, and returns how many deletes the API server took.
func (s *state) deleteBurst(ctx context.Context, kinds []kind, cfg Config) int {
	var wg sync.WaitGroup
	var n atomic.Int64
	for _, k := range kinds {
		for i := range cfg.Owners {
			wg.Go(func() {
				obj := k.newObject()
				key := s.key(k, i)
				obj.SetName(key.Name)
				obj.SetNamespace(key.Namespace)
				if s.c.Delete(ctx, obj) == nil {
					n.Add(1)
					s.count("burst delete")
				}
			})
		}
	}
	wg.Wait()
	return int(n.Load())
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
	// accepted are the lines of the writes the API server accepted (2xx),
	// but for Events.
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
		// An Event records a change made before it and changes no object:
		// client-go's recorder posts it in the background and retries a
		// failed post ten seconds later, so it may come after the
		// change it tells of has converged.
		if ok && !strings.HasSuffix(r.URL.Path, "/events") {
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
// the API server accepted, but for Events.
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

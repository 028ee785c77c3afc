package harness

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/steadyk8s/steady/testenv"

	"github.com/steadyk8s/steady/bench"
	"github.com/steadyk8s/steady/bench/operator"
)

var env = testenv.New(
	// The garbage collector, and the live children's own controllers.
	testenv.WithControllerManager{Controllers: []string{"deployment", "replicaset"}},
	testenv.WithCRDs{FS: bench.CRDs, Paths: []string{"config/crd"}},
	testenv.WithScheme{Scheme: NewScheme()},
)

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// ok counts the requests the API server accepted with verb on resource
// (with subresource), dry runs apart.
func ok(c Counts, verb, resource string, dryRun bool) int64 {
	return c.Requests(func(k Key) bool {
		r := k.Resource
		if k.Subresource != "" {
			r += "/" + k.Subresource
		}
		return k.OK() && k.Verb == verb && r == resource && k.DryRun == dryRun
	})
}

// teamWrites counts the writes to Teams (and their status) the API server
// accepted.
func teamWrites(c Counts) int64 {
	return c.Requests(func(k Key) bool { return k.OK() && k.Write() && !k.DryRun && k.Resource == "teams" })
}

// TestSmoke runs each variant with 20 Teams, once with an up-to-date cache
// and one worker, once with the cache 200ms behind and two workers, and
// checks the request counts that do not depend on timing: the accepted
// writes of each phase (a request refused for a stale read, a 409, is
// retried and reported, not asserted) and no request at all when nothing
// changed. Times are reported, never asserted.
func TestSmoke(t *testing.T) {
	env.Require(t)
	const n = 20
	for _, setup := range []struct {
		name    string
		lag     time.Duration
		workers int
	}{
		{"current cache", 0, 1},
		{"cache 200ms behind", 200 * time.Millisecond, 2},
	} {
		for i, v := range operator.Variants {
			t.Run(setup.name+"/"+v, func(t *testing.T) {
				cfg := Config{RESTConfig: env.Config, N: n, Run: i, WatchDelay: setup.lag, Workers: setup.workers}
				res, err := RunVariant(context.Background(), cfg, v)
				for _, p := range res.Phases {
					t.Logf("%s: wall %v, CPU %v, reconciles %+v, heap peak %d MiB, live %d MiB\n  %s", p.Phase, p.Wall, p.CPU,
						p.Reconciles, p.PeakHeap>>20, p.LiveHeap>>20, p.Counts)
				}
				if err != nil {
					t.Fatal(err)
				}
				checkCounts(t, res, setup.lag > 0)
				// The control plane's CPU is read where /proc is: the
				// kube-apiserver served the phase's 5N requests.
				if descendantsCPU(nil) != nil {
					if cpu := res.Phase(PhaseConverge).ControlPlaneCPU["kube-apiserver"]; cpu <= 0 {
						t.Errorf("converge: kube-apiserver CPU %v (%v)", cpu, res.Phase(PhaseConverge).ControlPlaneCPU)
					}
				}
			})
		}
	}
}

func checkCounts(t *testing.T, res Result, lagging bool) {
	t.Helper()
	n, v := int64(res.N), res.Variant
	check := func(phase, what string, got, want int64) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %s: got %d, want %d (%s)", phase, what, got, want, res.Phase(phase).Counts)
		}
	}

	// Converge: each child created once (a create the cache did not show
	// yet is refused, 409 AlreadyExists); the finalizer written once; the
	// status once by the hand-written code and, with a current cache, by
	// steady; cluster-api's helper writes the conditions and the rest of
	// the status (observedGeneration) in two status patches.
	c := res.Phase(PhaseConverge).Counts
	for _, kind := range []string{"configmaps", "serviceaccounts", "rolebindings"} {
		check(PhaseConverge, "created "+kind, ok(c, "POST", kind, false), n)
	}
	switch v {
	case operator.Steady:
		check(PhaseConverge, "finalizer patches", ok(c, "PATCH", "teams", false), n)
		if !lagging {
			// With a lagging cache a reconcile may run before the cache
			// shows its own previous write's effects elsewhere (a child):
			// not asserted there.
			check(PhaseConverge, "status patches", ok(c, "PATCH", "teams/status", false), n)
		}
	case operator.HandWritten:
		check(PhaseConverge, "finalizer updates", ok(c, "PUT", "teams", false), n)
		check(PhaseConverge, "status updates", ok(c, "PUT", "teams/status", false), n)
		check(PhaseConverge, "Team writes", teamWrites(c), 2*n)
	case operator.ClusterAPI:
		if !lagging {
			check(PhaseConverge, "finalizer patches", ok(c, "PATCH", "teams", false), n)
			check(PhaseConverge, "status patches", ok(c, "PATCH", "teams/status", false), 2*n)
		}
	}

	// Touch: every tampered child repaired by one update, no dry run; the
	// touched Teams are not written.
	c = res.Phase(PhaseTouch).Counts
	for _, kind := range []string{"configmaps", "serviceaccounts", "rolebindings"} {
		check(PhaseTouch, "updated "+kind, ok(c, "PUT", kind, false), n)
		check(PhaseTouch, "dry-run updates of "+kind, ok(c, "PUT", kind, true), 0)
	}
	check(PhaseTouch, "Team writes", teamWrites(c), 0)

	// Nothing changes: 2N reconciles each repetition, no request at all.
	p := res.Phase(PhaseNoop)
	check(PhaseNoop, "repetitions", int64(p.Repeats), NoopRepeats)
	check(PhaseNoop, "reconciles", p.Reconciles.Total, 2*n*NoopRepeats)
	check(PhaseNoop, "requests", p.Counts.Requests(func(k Key) bool { return k.Verb != "WATCH" }), 0)

	// Delete: the finalizer removed once per Team.
	check(PhaseDelete, "Team writes", teamWrites(res.Phase(PhaseDelete).Counts), n)
}

// TestConvergeCostSmoke converges a few new Teams one reconcile each, as
// make bench measures a converging reconcile: MeasureConverge fails unless
// each sends exactly the finalizer, three creates and the status.
func TestConvergeCostSmoke(t *testing.T) {
	env.Require(t)
	vs := []string{operator.Steady, operator.HandWritten}
	costs, err := MeasureConverge(context.Background(), Config{RESTConfig: env.Config, Run: 500}, vs, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(costs) != len(vs) {
		t.Fatalf("%d costs for %d variants", len(costs), len(vs))
	}
	for i, cost := range costs {
		if cost.Variant != vs[i] || cost.Teams != 5 || cost.Requests != convergeRequests || cost.Allocs == 0 || cost.CPUNs == 0 {
			t.Errorf("%s: %+v", vs[i], cost)
		}
		t.Logf("%s: %.0fµs CPU, %.0f allocations per converging reconcile", cost.Variant, cost.CPUNs/1e3, cost.Allocs)
	}
}

// TestConvergePhaseSmoke converges Teams in chunks, the variants taking
// turns, as make bench measures the converge phase in turns: every Team of
// every chunk (the last one shorter) converged by exactly the 5 accepted
// writes (MeasureConvergePhase fails otherwise), and a CPU and wall time
// measured. A 409 (the hand-written code's status write from a stale read)
// is reported, not asserted.
func TestConvergePhaseSmoke(t *testing.T) {
	env.Require(t)
	vs := []string{operator.Steady, operator.HandWritten}
	costs, err := MeasureConvergePhase(context.Background(), Config{RESTConfig: env.Config, Run: 540}, vs, 7, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(costs) != len(vs) {
		t.Fatalf("%d costs for %d variants", len(costs), len(vs))
	}
	for i, cost := range costs {
		if cost.Variant != vs[i] || cost.Teams != 7 || cost.Chunk != 3 || cost.Writes != convergeRequests || cost.Requests < cost.Writes || cost.Reconciles < 1 || cost.CPUNs <= 0 || cost.WallNs <= 0 {
			t.Errorf("%s: %+v", vs[i], cost)
		}
		t.Logf("%s: %.0fµs CPU, %.2fms wall, %.2f reconciles, %.2f requests per Team, %d conflicts", cost.Variant, cost.CPUNs/1e3, cost.WallNs/1e6, cost.Reconciles, cost.Requests, cost.Conflicts)
	}
}

// TestNoopCostSmoke measures a no-op reconcile as make bench does: no
// request, and a CPU time and allocations per reconcile.
func TestNoopCostSmoke(t *testing.T) {
	env.Require(t)
	for i, v := range []string{operator.Steady, operator.HandWritten} {
		cost, err := MeasureNoop(context.Background(), Config{RESTConfig: env.Config, Run: 520 + i}, v)
		if err != nil {
			t.Fatal(err)
		}
		if cost.Requests != 0 || cost.AllocsPerOp == 0 || cost.CPUNsPerOp <= 0 || cost.NsPerOp <= 0 {
			t.Errorf("%s: %+v", v, cost)
		}
		t.Logf("%s: %dµs CPU, %d allocations per no-op reconcile", v, cost.CPUNsPerOp/1e3, cost.AllocsPerOp)
	}
}

// TestCounterClassifiesRequests checks the names the counter gives to the
// paths the clients use.
func TestCounterClassifiesRequests(t *testing.T) {
	for _, tc := range []struct {
		method, url string
		want        string
	}{
		{"GET", "/api/v1/namespaces/ns/configmaps/x", "GET configmaps 0"},
		{"GET", "/api/v1/namespaces/ns/configmaps?labelSelector=a", "LIST configmaps 0"},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=true&resourceVersion=1", "WATCH configmaps 0"},
		{"PATCH", "/apis/bench.steady.dev/v1alpha1/namespaces/ns/teams/t/status", "PATCH teams/status 0"},
		{"PUT", "/apis/rbac.authorization.k8s.io/v1/namespaces/ns/rolebindings/t?dryRun=All", "DRYRUN PUT rolebindings 0"},
		{"GET", "/api/v1/namespaces/ns", "GET namespaces 0"},
		{"POST", "/api/v1/namespaces", "POST namespaces 0"},
		{"GET", "/apis/bench.steady.dev/v1alpha1", "DISCOVERY  0"},
	} {
		r, err := newRequest(tc.method, tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := classify(r).String(); got != tc.want {
			t.Errorf("%s %s: got %q, want %q", tc.method, tc.url, got, tc.want)
		}
	}
}

func newRequest(method, url string) (*http.Request, error) {
	return http.NewRequest(method, "https://127.0.0.1:6443"+url, nil)
}

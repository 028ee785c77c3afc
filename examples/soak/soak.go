// Package soak is the reliability soak of steady's example operators
// (docs/reliability.md): the five examples (tenant, usernamespace, at,
// bucket, bundle) in one controller-runtime manager per process, two such
// processes with leader election, on a control plane with the garbage
// collector, under churn from several goroutines, faults on each process's
// requests (through a proxy), a cache held back, dropped watch
// connections, another writer; the leader's process killed with SIGKILL
// right after a burst of deletes starts, the kube-apiserver restarted, and
// etcd killed with SIGKILL and started again. Once churn and faults stop it
// checks what the operators promise and reports every violation.
// TestSoakSmoke runs it briefly in make test; make soak runs
// examples/cmd/soak. A binary that runs the soak calls [RunReplicaIfAsked]
// first: the replicas are new processes of that binary.
package soak

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/steadyk8s/steady"
	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/testenv"

	"github.com/steadyk8s/steady/examples/at"
	"github.com/steadyk8s/steady/examples/bucket"
	"github.com/steadyk8s/steady/examples/bundle"
	"github.com/steadyk8s/steady/examples/tenant"
	tenancyv1alpha1 "github.com/steadyk8s/steady/examples/tenant/api/v1alpha1"
	"github.com/steadyk8s/steady/examples/usernamespace"
)

// The other writer's marks.
const (
	OtherLabel      = "other.example.com/audited"
	OtherAnnotation = "other.example.com/note"
	OtherFinalizer  = "other.example.com/audit"
	OtherCondition  = "other.example.com/Audited"
)

// Config sizes a soak run.
type Config struct {
	// Owners is the number of owner names per example kind.
	Owners int
	// Churners is the number of goroutines that create, change and delete
	// owners.
	Churners int
	// Churn is how long churn and faults last.
	Churn time.Duration
	// Replicas is how many managers run at once, with leader election on
	// the Lease [LeaseName] in [Namespace]: one leader and standbys.
	Replicas int
	// LeaderKills is how often during churn the leader's process is killed
	// with SIGKILL, right after a burst of owner deletes starts (its lease
	// not released, its requests cut mid-flight); a new standby process
	// replaces it, as a restarted pod would.
	LeaderKills int
	// APIServerRestarts is how often during churn the kube-apiserver is
	// stopped and started again on the same etcd.
	APIServerRestarts int
	// EtcdRestarts is how often during churn etcd is killed with SIGKILL
	// and started again on its data, EtcdDowntime later.
	EtcdRestarts int
	EtcdDowntime time.Duration
	// LeaseDuration, RenewDeadline and RetryPeriod are the replicas' leader
	// election timings.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Quiet is the window after convergence (every promise kept, and the
	// leader's cache showing the live state) in which no write may be made.
	Quiet time.Duration
	// FaultRate is the share of the replicas' requests that fail.
	FaultRate float64
	// WatchDropRate is the share of watch connections cut a few seconds
	// after they open.
	WatchDropRate float64
	// WatchDelay holds back every watch event of the replicas.
	WatchDelay time.Duration
	// Converge bounds the wait for convergence.
	Converge time.Duration
	// Seed seeds every random choice.
	Seed uint64
}

// Smoke is the run make test does (under 60 s of soak).
var Smoke = Config{Owners: 2, Churners: 2, Churn: 12 * time.Second, Quiet: 5 * time.Second,
	Replicas: 2, LeaderKills: 1, APIServerRestarts: 1, EtcdRestarts: 1, EtcdDowntime: 2 * time.Second,
	LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
	FaultRate: 0.03, WatchDropRate: 0.1, WatchDelay: 300 * time.Millisecond, Converge: 2 * time.Minute, Seed: 1}

// Long is the run make soak does.
var Long = Config{Owners: 6, Churners: 4, Churn: 90 * time.Second, Quiet: 30 * time.Second,
	Replicas: 2, LeaderKills: 4, APIServerRestarts: 1, EtcdRestarts: 2, EtcdDowntime: 5 * time.Second,
	LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
	FaultRate: 0.03, WatchDropRate: 0.1, WatchDelay: 300 * time.Millisecond, Converge: 3 * time.Minute, Seed: 1}

// Report is what a run did and found.
type Report struct {
	// Operations counts the churn's and the other writer's successful
	// writes by kind ("user create", "other writer", ...).
	Operations map[string]int
	// Faults counts the faults injected by kind.
	Faults map[string]int
	// Violations lists every broken promise, naming the object.
	Violations []string
	// ConvergeWrites is the number of writes by the replicas from the end
	// of the disruptions until every check passed; CatchUpWrites from then
	// until the leader's cache caught up (refused ones only: an accepted
	// one is a violation).
	ConvergeWrites, CatchUpWrites int
	// QuietWrites is the number of writes by the replicas in the quiet
	// window; QuietRequests describes all its requests there.
	QuietWrites   int
	QuietRequests string
	// QuietWriteLines names each write in the quiet window: the replica,
	// the request, its answer and the start of its body.
	QuietWriteLines []string
	// Goroutines and heap (bytes in use after a GC) of the soak's own
	// process (its churners, proxies and checks) before the first replica
	// started and after the last one stopped.
	GoroutinesBefore, GoroutinesAfter int
	HeapBefore, HeapAfter             uint64
	// Events lists what happened to the replicas and the kube-apiserver, in
	// order, each with the seconds since the run began.
	Events []string
	// Elections counts the replicas elected leader; LeasesLost the
	// replicas that could not renew their lease (the API server away too
	// long, say) and exited, each replaced by a new one.
	Elections, LeasesLost int
	// Takeovers is, for each killed leader, how long until another replica
	// was elected; APIServerDowntime and EtcdDowntime, for each restart of
	// the kube-apiserver or etcd, how long until the API server was ready
	// again.
	Takeovers, APIServerDowntime, EtcdDowntime []time.Duration
}

// String prints the report.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "operations: %s\n", formatCounts(r.Operations))
	fmt.Fprintf(&b, "faults injected: %s\n", formatCounts(r.Faults))
	fmt.Fprintf(&b, "kube-apiserver restarts: %d (ready again after %s)\n", len(r.APIServerDowntime), formatDurations(r.APIServerDowntime))
	fmt.Fprintf(&b, "etcd kills: %d (the API server ready again after %s)\n", len(r.EtcdDowntime), formatDurations(r.EtcdDowntime))
	fmt.Fprintf(&b, "leaders killed: %d (taken over after %s); elections: %d; leases lost: %d\n", len(r.Takeovers), formatDurations(r.Takeovers), r.Elections, r.LeasesLost)
	fmt.Fprintf(&b, "events:\n")
	for _, e := range r.Events {
		fmt.Fprintf(&b, "  %s\n", e)
	}
	fmt.Fprintf(&b, "writes while converging after the disruptions: %d, then while the leader's cache caught up: %d\n", r.ConvergeWrites, r.CatchUpWrites)
	fmt.Fprintf(&b, "writes in the quiet window: %d (%s)\n", r.QuietWrites, r.QuietRequests)
	for _, w := range r.QuietWriteLines {
		fmt.Fprintf(&b, "  %s\n", w)
	}
	fmt.Fprintf(&b, "goroutines: %d before the first manager, %d after the last stopped\n", r.GoroutinesBefore, r.GoroutinesAfter)
	fmt.Fprintf(&b, "heap in use: %.1f MiB before, %.1f MiB after\n", float64(r.HeapBefore)/(1<<20), float64(r.HeapAfter)/(1<<20))
	fmt.Fprintf(&b, "violations: %d\n", len(r.Violations))
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "  %s\n", v)
	}
	return b.String()
}

func formatDurations(ds []time.Duration) string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Round(100*time.Millisecond).String())
	}
	return strings.Join(out, ", ")
}

func formatCounts(m map[string]int) string {
	var out []string
	total := 0
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%d", k, v))
		total += v
	}
	sort.Strings(out)
	return fmt.Sprintf("%d (%s)", total, strings.Join(out, ", "))
}

// Namespace holds the soak's namespaced owners.
const Namespace = "soak"

// Scheme is the soak's scheme: client-go's kinds, CRDs and the five
// examples' types.
func Scheme() (*k8sruntime.Scheme, error) {
	scheme := k8sruntime.NewScheme()
	for _, add := range []func(*k8sruntime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme,
		tenant.AddToScheme, usernamespace.AddToScheme, at.AddToScheme, bucket.AddToScheme, bundle.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}

// NewEnvironment returns the control plane the soak runs on: etcd,
// kube-apiserver and kube-controller-manager (garbage collector), with the
// five examples' CRDs and types.
func NewEnvironment() (*testenv.Environment, error) {
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	crds := fstest.MapFS{}
	for name, fsys := range map[string]fs.FS{"tenant": tenant.CRDs, "usernamespace": usernamespace.CRDs, "at": at.CRDs, "bucket": bucket.CRDs, "bundle": bundle.CRDs} {
		err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := fs.ReadFile(fsys, p)
			crds["crds/"+name+"-"+path.Base(p)] = &fstest.MapFile{Data: data}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return testenv.New(testenv.WithControllerManager{}, testenv.WithCRDs{FS: crds, Paths: []string{"crds"}}, testenv.WithScheme{Scheme: scheme}), nil
}

// state is one run's shared state.
type state struct {
	c      client.Client
	s3     s3Client
	faults *faults
	// counter counts the replicas' requests but their lease's.
	counter *counter
	log     *eventLog
	ops     sync.Map // string -> *atomic.Int64
	marked  sync.Map // owner or child UID -> description
}

func (s *state) count(what string) {
	v, _ := s.ops.LoadOrStore(what, &atomic.Int64{})
	v.(*atomic.Int64).Add(1)
}

func (s *state) key(k kind, i int) types.NamespacedName {
	name := fmt.Sprintf("%s-%d", k.name, i)
	if k.namespaced {
		return types.NamespacedName{Namespace: Namespace, Name: name}
	}
	return types.NamespacedName{Name: name}
}

// Run runs the soak on env (started by the caller, see [NewEnvironment])
// and returns its report; t fails on any violation.
func Run(t *testing.T, env *testenv.Environment, cfg Config) *Report {
	ctx := context.Background()
	fake := bucket.NewFakeS3()
	defer fake.Close()
	s3, err := fake.S3.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	s := &state{c: env.Client, s3: s3, faults: newFaults(cfg.FaultRate, cfg.WatchDropRate, cfg.Seed),
		counter: &counter{}, log: &eventLog{start: time.Now()}}
	kinds := s.kinds()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// Each Tenant gets one namespace of its name, labelled to join it.
	for i := range cfg.Owners {
		name := s.key(kinds[1], i).Name
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{tenancyv1alpha1.TenantLabel: name}}}
		if err := env.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	// The kubelet's stand-in: every At's Pod runs to completion.
	stopPods := make(chan struct{})
	podsDone := make(chan struct{})
	go func() {
		defer close(podsDone)
		for {
			select {
			case <-stopPods:
				return
			case <-time.After(200 * time.Millisecond):
			}
			var pods corev1.PodList
			if env.Client.List(ctx, &pods, client.InNamespace(Namespace), client.HasLabels{at.PodLabel}) != nil {
				continue
			}
			for i := range pods.Items {
				p := &pods.Items[i]
				if p.Status.Phase != corev1.PodSucceeded && p.DeletionTimestamp.IsZero() {
					p.Status.Phase = corev1.PodSucceeded
					_ = env.Client.Status().Update(ctx, p)
				}
			}
		}
	}()
	defer func() { close(stopPods); <-podsDone }()

	report := &Report{}
	report.GoroutinesBefore, report.HeapBefore = goroutinesAndHeap()
	rs := newReplicas(env, cfg, s, s.log, fake.S3)
	s.faults.on.Store(true)
	for range cfg.Replicas {
		if err := rs.start("at the start"); err != nil {
			t.Fatal(err)
		}
	}
	disrupted := make(chan struct{})
	go func() {
		defer close(disrupted)
		s.disrupt(ctx, env, rs, kinds, cfg, cfg.Churn, report)
	}()
	s.churn(ctx, kinds, cfg, cfg.Churn, cfg.Seed)
	<-disrupted
	s.faults.on.Store(false)
	s.removeOtherFinalizers(ctx, kinds, cfg)
	s.counter.Reset()
	// Converged: every promise kept, and the leader's cache caught up with
	// the live state (see state.cacheLag); the quiet window starts then.
	// Between the two, a write may be refused (a create the stale cache
	// did not know exists), but none may be accepted: every promise was
	// kept already, so an accepted write changed a converged state (a
	// condition flapping while the cache catches up, say).
	deadline := time.Now().Add(cfg.Converge)
	var catchUp []string
	for {
		report.Violations = s.violations(ctx, kinds, cfg)
		if len(report.Violations) == 0 {
			// A replica started in the disruptions applies its ClusterRoles
			// as it starts: writes of its start, not of the catching up.
			if starting := rs.starting(); starting != "" {
				report.Violations = []string{starting}
			}
		}
		if len(report.Violations) == 0 {
			report.ConvergeWrites += s.counter.Writes()
			s.counter.Reset()
			lag := s.waitCaughtUp(ctx, kinds, rs, time.Until(deadline))
			report.CatchUpWrites += s.counter.Writes()
			if accepted := s.counter.AcceptedLines(); len(accepted) > 0 {
				catchUp = append(catchUp, fmt.Sprintf("%d writes accepted after every check passed, while the leader's cache caught up:\n    %s",
					len(accepted), strings.Join(accepted, "\n    ")))
			}
			s.counter.Reset()
			if lag != "" {
				report.Violations = []string{"the leader's cache did not catch up with the live state: " + lag}
			} else if report.Violations = s.violations(ctx, kinds, cfg); len(report.Violations) == 0 {
				break // still kept once caught up
			}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	report.ConvergeWrites += s.counter.Writes()
	report.Violations = append(report.Violations, catchUp...)
	s.counter.Reset()
	time.Sleep(cfg.Quiet)
	report.QuietWrites, report.QuietRequests, report.QuietWriteLines = s.counter.Writes(), s.counter.String(), s.counter.WriteLines()
	if report.QuietWrites != 0 {
		report.Violations = append(report.Violations, fmt.Sprintf("%d writes in the quiet window of %s: %s", report.QuietWrites, cfg.Quiet, report.QuietRequests))
	}
	rs.stop()
	s.log.add("every replica stopped")
	report.Violations = append(report.Violations, s.log.violations...)
	report.Violations = append(report.Violations, rs.failures...)
	report.Events = s.log.events
	report.Elections, report.LeasesLost = rs.elections, rs.leasesLost
	// Every manager has stopped: its goroutines should be gone.
	time.Sleep(2 * time.Second)
	report.GoroutinesAfter, report.HeapAfter = goroutinesAndHeap()
	if extra := report.GoroutinesAfter - report.GoroutinesBefore; extra > 50 {
		report.Violations = append(report.Violations, fmt.Sprintf("%d goroutines left after the managers stopped (%d before, %d after)", extra, report.GoroutinesBefore, report.GoroutinesAfter))
	}
	report.Operations = map[string]int{}
	s.ops.Range(func(k, v any) bool { report.Operations[k.(string)] = int(v.(*atomic.Int64).Load()); return true })
	report.Faults = s.faults.Counts()
	t.Logf("soak report:\n%s", report)
	for _, v := range report.Violations {
		t.Errorf("violation: %s", v)
	}
	return report
}

func goroutinesAndHeap() (int, uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.HeapInuse
}

// setup registers the five examples' controllers on mgr, as the demo does,
// the Bucket's with object storage at s3.
func setup(mgr ctrl.Manager, s3 bucket.S3Config) (started <-chan struct{}, err error) {
	c := steady.NewClient(mgr) // one per manager, shared by its reconcilers
	roles := &tenant.ClusterRoles{Client: c}
	if err := mgr.Add(roles); err != nil {
		return nil, err
	}
	for _, r := range []interface{ SetupWithManager(ctrl.Manager) error }{
		&tenant.Reconciler{Client: c, ClusterRolesReady: roles.Ready()},
		&usernamespace.Reconciler{Client: c},
		&at.Reconciler{Client: c},
		&bucket.Reconciler{Client: c, S3: s3},
		&bundle.Reconciler{Client: c},
	} {
		if err := r.SetupWithManager(mgr); err != nil {
			return nil, err
		}
	}
	return roles.Ready(), nil
}

// churn creates, changes, deletes and recreates owners from several
// goroutines, while another writer marks owners and children, for d.
func (s *state) churn(ctx context.Context, kinds []kind, cfg Config, d time.Duration, seed uint64) {
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	for g := range cfg.Churners {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			for time.Now().Before(stop) {
				k := kinds[rng.IntN(len(kinds))]
				key := s.key(k, rng.IntN(cfg.Owners))
				obj := k.newObject()
				err := s.c.Get(ctx, key, obj)
				switch {
				case apierrors.IsNotFound(err):
					obj = k.newObject()
					obj.SetName(key.Name)
					obj.SetNamespace(key.Namespace)
					k.setSpec(obj, rng)
					if s.c.Create(ctx, obj) == nil {
						s.count(k.name + " create")
					}
				case err != nil || !obj.GetDeletionTimestamp().IsZero():
				case rng.IntN(4) == 0:
					if s.c.Delete(ctx, obj) == nil {
						s.count(k.name + " delete")
					}
				default:
					k.setSpec(obj, rng)
					if s.c.Update(ctx, obj) == nil {
						s.count(k.name + " update")
					}
				}
				time.Sleep(time.Duration(20+rng.IntN(80)) * time.Millisecond)
			}
		})
	}
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(seed, 99))
		for time.Now().Before(stop) {
			k := kinds[rng.IntN(len(kinds))]
			key := s.key(k, rng.IntN(cfg.Owners))
			if s.markOwner(ctx, k, key) == nil {
				s.count("other writer (owner)")
			}
			if s.markChild(ctx, k, key) == nil {
				s.count("other writer (child)")
			}
			time.Sleep(time.Duration(50+rng.IntN(100)) * time.Millisecond)
		}
	})
	wg.Wait()
}

var errSkip = fmt.Errorf("nothing to mark")

// markOwner adds the other writer's label, annotation, finalizer and
// condition to an owner. From an owner being deleted it takes its
// finalizer off instead, its own cleanup done, as a controller that
// holds a finalizer does: the owner goes, and churn can create it again.
func (s *state) markOwner(ctx context.Context, k kind, key types.NamespacedName) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := s.getUnstructured(ctx, k.newObject(), key)
		if err != nil {
			return err
		}
		if !u.GetDeletionTimestamp().IsZero() {
			if !slices.Contains(u.GetFinalizers(), OtherFinalizer) {
				return errSkip
			}
			u.SetFinalizers(slices.DeleteFunc(u.GetFinalizers(), func(f string) bool { return f == OtherFinalizer }))
			if err := s.c.Update(ctx, u); err != nil {
				return err
			}
			s.count("other writer (finalizer released)")
			return errSkip
		}
		mark(u)
		if !slices.Contains(u.GetFinalizers(), OtherFinalizer) {
			u.SetFinalizers(append(u.GetFinalizers(), OtherFinalizer))
		}
		if err := s.c.Update(ctx, u); err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		conds = slices.DeleteFunc(conds, func(c any) bool { m, _ := c.(map[string]any); return m["type"] == OtherCondition })
		conds = append(conds, map[string]any{"type": OtherCondition, "status": "True", "reason": "Audited",
			"message": "by the soak's other writer", "lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339)})
		if err := unstructured.SetNestedSlice(u.Object, conds, "status", "conditions"); err != nil {
			return err
		}
		if err := s.c.Status().Update(ctx, u); err != nil {
			return err
		}
		s.marked.Store(u.GetUID(), fmt.Sprintf("%s %s", u.GetKind(), keyString(key)))
		return nil
	})
}

// markChild adds the other writer's label and annotation to a child.
func (s *state) markChild(ctx context.Context, k kind, key types.NamespacedName) error {
	owner := k.newObject()
	if err := s.c.Get(ctx, key, owner); err != nil {
		return err
	}
	child, childKey := k.child(owner)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := s.getUnstructured(ctx, child, childKey)
		if err != nil {
			return err
		}
		if !u.GetDeletionTimestamp().IsZero() {
			return errSkip
		}
		mark(u)
		if err := s.c.Update(ctx, u); err != nil {
			return err
		}
		s.marked.Store(u.GetUID(), fmt.Sprintf("%s %s", u.GetKind(), keyString(childKey)))
		return nil
	})
}

func mark(u *unstructured.Unstructured) {
	l := u.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[OtherLabel] = "yes"
	u.SetLabels(l)
	a := u.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[OtherAnnotation] = "kept"
	u.SetAnnotations(a)
}

func (s *state) getUnstructured(ctx context.Context, typed client.Object, key types.NamespacedName) (*unstructured.Unstructured, error) {
	gvk, err := apiutil.GVKForObject(typed, s.c.Scheme())
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, s.c.Get(ctx, key, u)
}

// removeOtherFinalizers takes the other writer's finalizer off every owner.
func (s *state) removeOtherFinalizers(ctx context.Context, kinds []kind, cfg Config) {
	for _, k := range kinds {
		for i := range cfg.Owners {
			_ = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				obj := k.newObject()
				if err := s.c.Get(ctx, s.key(k, i), obj); err != nil || !slices.Contains(obj.GetFinalizers(), OtherFinalizer) {
					return client.IgnoreNotFound(err)
				}
				obj.SetFinalizers(slices.DeleteFunc(obj.GetFinalizers(), func(f string) bool { return f == OtherFinalizer }))
				return s.c.Update(ctx, obj)
			})
		}
	}
}

// violations checks every owner name, every object that points at an owner
// and every object the other writer marked against what the API server
// holds.
func (s *state) violations(ctx context.Context, kinds []kind, cfg Config) []string {
	var out []string
	for _, k := range kinds {
		for i := range cfg.Owners {
			key := s.key(k, i)
			bad := func(format string, args ...any) {
				out = append(out, fmt.Sprintf("%s %s: %s", k.name, keyString(key), fmt.Sprintf(format, args...)))
			}
			obj := k.newObject()
			err := s.c.Get(ctx, key, obj)
			switch {
			case apierrors.IsNotFound(err):
				k.checkGone(ctx, s, key, bad)
				continue
			case err != nil:
				bad("reading: %v", err)
				continue
			case !obj.GetDeletionTimestamp().IsZero():
				bad("still deleting, finalizers %v left", obj.GetFinalizers())
				continue
			}
			getter, ok := obj.(conditions.Getter)
			if !ok {
				bad("%T has no conditions", obj)
				continue
			}
			ready := conditions.Get(getter, conditions.Ready)
			wantStatus, wantReason := metav1.ConditionTrue, ""
			if k.ready != nil {
				wantStatus, wantReason = k.ready(obj)
			}
			u, _ := s.getUnstructured(ctx, obj, key)
			observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
			if ready == nil || ready.Status != wantStatus || wantReason != "" && ready.Reason != wantReason || observed != obj.GetGeneration() {
				bad("Ready %v (want %s %s), observedGeneration %d of %d", ready, wantStatus, wantReason, observed, obj.GetGeneration())
				continue
			}
			k.check(ctx, s, obj, bad)
		}
	}
	out = append(out, s.orphansAndDuplicates(ctx, kinds)...)
	s.marked.Range(func(uid, what any) bool {
		out = append(out, s.checkMarked(ctx, kinds, uid.(types.UID), what.(string))...)
		return true
	})
	return out
}

// childKinds are the kinds the examples make with an ownerReference.
var childKinds = []client.ObjectList{&corev1.NamespaceList{}, &corev1.ResourceQuotaList{}, &corev1.LimitRangeList{},
	&corev1.SecretList{}, &corev1.PodList{}, &corev1.ServiceAccountList{}, &rbacv1.ClusterRoleList{}}

// orphansAndDuplicates lists the objects controlled by an owner of the
// soak's kinds: the owner must be live under that UID (else the garbage
// collector left an orphan), and no owner controls two objects of a kind in
// one namespace.
func (s *state) orphansAndDuplicates(ctx context.Context, kinds []kind) []string {
	var out []string
	ours := map[string]kind{}
	for _, k := range kinds {
		gvk, _ := apiutil.GVKForObject(k.newObject(), s.c.Scheme())
		ours[gvk.Kind] = k
	}
	seen := map[string]string{}
	lists := append([]client.ObjectList{}, childKinds...)
	for _, extra := range []string{"RoleBindingList", "ClusterRoleBindingList", "NetworkPolicyList"} {
		u := &unstructured.UnstructuredList{}
		switch extra {
		case "NetworkPolicyList":
			u.SetAPIVersion("networking.k8s.io/v1")
		default:
			u.SetAPIVersion("rbac.authorization.k8s.io/v1")
		}
		u.SetKind(extra)
		lists = append(lists, u)
	}
	for _, list := range lists {
		if err := s.c.List(ctx, list); err != nil {
			out = append(out, fmt.Sprintf("listing %T: %v", list, err))
			continue
		}
		items, _ := metaItems(list)
		for _, item := range items {
			ref := metav1.GetControllerOf(item)
			if ref == nil {
				continue
			}
			k, ok := ours[ref.Kind]
			if !ok {
				continue
			}
			what := fmt.Sprintf("%s %s/%s", kindOf(item), item.GetNamespace(), item.GetName())
			owner := k.newObject()
			key := types.NamespacedName{Name: ref.Name}
			if k.namespaced {
				key.Namespace = item.GetNamespace()
			}
			err := s.c.Get(ctx, key, owner)
			if err != nil || owner.GetUID() != ref.UID {
				if item.GetDeletionTimestamp().IsZero() || err != nil {
					out = append(out, fmt.Sprintf("orphan: %s controlled by %s %s (uid %s), which is gone (%v)", what, ref.Kind, keyString(key), ref.UID, err))
				}
				continue
			}
			dup := fmt.Sprintf("%s %s %s", ref.UID, item.GetNamespace(), kindOf(item))
			if other, ok := seen[dup]; ok {
				out = append(out, fmt.Sprintf("duplicate child: %s and %s both controlled by %s %s", other, what, ref.Kind, keyString(key)))
			}
			seen[dup] = what
		}
	}
	return out
}

// kindOf names an item's kind: its Go type, or for an unstructured item
// (a RoleBinding and a NetworkPolicy are both) the kind it holds.
func kindOf(item client.Object) string {
	if u, ok := item.(*unstructured.Unstructured); ok {
		return u.GetKind()
	}
	return fmt.Sprintf("%T", item)
}

func metaItems(list client.ObjectList) ([]client.Object, error) {
	var out []client.Object
	if u, ok := list.(*unstructured.UnstructuredList); ok {
		for i := range u.Items {
			out = append(out, &u.Items[i])
		}
		return out, nil
	}
	objs, err := meta.ExtractList(list)
	for _, o := range objs {
		out = append(out, o.(client.Object))
	}
	return out, err
}

// checkMarked checks that an object the other writer marked, if it still
// exists under that UID, keeps the marks.
func (s *state) checkMarked(ctx context.Context, kinds []kind, uid types.UID, what string) []string {
	kindName, keyText, _ := strings.Cut(what, " ")
	var typed client.Object
	for _, k := range kinds {
		gvk, _ := apiutil.GVKForObject(k.newObject(), s.c.Scheme())
		if gvk.Kind == kindName {
			typed = k.newObject()
		}
		if child, _ := k.child(k.newObject()); typed == nil {
			if gvk, _ := apiutil.GVKForObject(child, s.c.Scheme()); gvk.Kind == kindName {
				typed = child
			}
		}
	}
	if typed == nil {
		return []string{fmt.Sprintf("soak: unknown marked kind %s", kindName)}
	}
	key := types.NamespacedName{Name: keyText}
	if ns, name, ok := strings.Cut(keyText, "/"); ok {
		key = types.NamespacedName{Namespace: ns, Name: name}
	}
	u, err := s.getUnstructured(ctx, typed, key)
	if err != nil || u.GetUID() != uid {
		return nil // gone, or another object of that name now
	}
	var out []string
	if u.GetLabels()[OtherLabel] != "yes" || u.GetAnnotations()[OtherAnnotation] != "kept" {
		out = append(out, fmt.Sprintf("%s: the other writer's label or annotation lost (labels %v, annotations %v)", what, u.GetLabels(), u.GetAnnotations()))
	}
	if getter, ok := typed.(conditions.Getter); ok && s.c.Get(ctx, key, typed) == nil {
		if !conditions.IsTrue(getter, OtherCondition) {
			out = append(out, fmt.Sprintf("%s: the other writer's condition %s lost", what, OtherCondition))
		}
	}
	return out
}

// keyString is namespace/name, or name for a cluster-scoped object.
func keyString(key types.NamespacedName) string {
	if key.Namespace == "" {
		return key.Name
	}
	return key.String()
}

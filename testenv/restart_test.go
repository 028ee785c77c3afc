package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steadyk8s/steady/testenv"
)

// labeler is a controller that labels every ConfigMap of namespace ns with
// by=<who>, through mgr's cached client.
func labeler(ns, who string, reconciles *atomic.Int64) testenv.WithSetup {
	return func(mgr ctrl.Manager) error {
		return ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Named("labeler").
			Complete(crreconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
				if req.Namespace != ns {
					return ctrl.Result{}, nil
				}
				reconciles.Add(1)
				var cm corev1.ConfigMap
				if err := mgr.GetClient().Get(ctx, req.NamespacedName, &cm); err != nil {
					return ctrl.Result{}, client.IgnoreNotFound(err)
				}
				if _, ok := cm.Labels["by"]; ok {
					return ctrl.Result{}, nil
				}
				before := cm.DeepCopy()
				if cm.Labels == nil {
					cm.Labels = map[string]string{}
				}
				cm.Labels["by"] = who
				return ctrl.Result{}, mgr.GetClient().Patch(ctx, &cm, client.MergeFrom(before))
			}))
	}
}

// labelledBy waits until the API server holds the ConfigMap labelled by who.
func labelledBy(t *testing.T, key client.ObjectKey, who string) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("ConfigMap %s labelled by %s", key, who), func() error {
		var cm corev1.ConfigMap
		if err := env.Client.Get(context.Background(), key, &cm); err != nil {
			return err
		}
		if cm.Labels["by"] != who {
			return fmt.Errorf("labels %v", cm.Labels)
		}
		return nil
	})
}

// TestManagerKeepsWorkingAcrossAPIServerRestart restarts the shared
// environment's kube-apiserver under a running manager: the objects
// survive, the manager's watches resume (a ConfigMap created after the
// restart is seen and labelled by its controller), its writes land, the
// environment's own client reconnects, and the controller manager still
// collects garbage and deletes namespaces.
func TestManagerKeepsWorkingAcrossAPIServerRestart(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	var reconciles atomic.Int64
	mgr := env.StartManager(t, labeler(ns, "manager", &reconciles))
	if _, err := mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{}); err != nil { // a warm cache
		t.Fatal(err)
	}
	before := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "before"}}
	if err := env.Client.Create(ctx, before); err != nil {
		t.Fatal(err)
	}
	labelledBy(t, client.ObjectKeyFromObject(before), "manager")
	host := env.Config.Host

	if err := env.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(before), &corev1.ConfigMap{}); err == nil {
		t.Fatal("the API server answered while stopped")
	}
	if err := env.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if env.Config.Host != host {
		t.Errorf("the API server moved from %s to %s", host, env.Config.Host)
	}

	// The objects survive, in the API server and in the manager's cache.
	var got corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(before), &got); err != nil || got.Labels["by"] != "manager" {
		t.Fatalf("after the restart the API server holds %v (err %v)", got.Labels, err)
	}
	if err := mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(before), &got); err != nil {
		t.Fatalf("after the restart the manager's cache lost the ConfigMap: %v", err)
	}
	// The watch resumes: a ConfigMap created now reaches the controller,
	// whose write lands.
	after := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "after"}}
	if err := env.Client.Create(ctx, after); err != nil {
		t.Fatal(err)
	}
	labelledBy(t, client.ObjectKeyFromObject(after), "manager")
	testenv.Eventually(t, "the manager's cache sees the label written after the restart", func() error {
		var cm corev1.ConfigMap
		if err := mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(after), &cm); err != nil {
			return err
		}
		if cm.Labels["by"] != "manager" {
			return fmt.Errorf("labels %v", cm.Labels)
		}
		return nil
	})
	// A write through the manager's client lands.
	patched := got.DeepCopy()
	patched.Data = map[string]string{"written": "after the restart"}
	if err := mgr.GetClient().Patch(ctx, patched, client.MergeFrom(&got)); err != nil {
		t.Fatalf("a write through the manager's client after the restart: %v", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(before), &got); err != nil || got.Data["written"] != "after the restart" {
		t.Fatalf("the write after the restart did not land: %v (err %v)", got.Data, err)
	}
	// The controller manager still works.
	if collected, nsGone := deletionWorks(t, env, 30*time.Second); !collected || !nsGone {
		t.Fatalf("after the restart, within 30s: child collected %v, namespace deleted %v", collected, nsGone)
	}
}

// cuttable is a transport that fails every request once cut, as a
// process that was killed sends nothing more.
type cuttable struct{ cut atomic.Bool }

func (c *cuttable) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTrip(func(r *http.Request) (*http.Response, error) {
		if c.cut.Load() {
			return nil, errors.New("killed")
		}
		return rt.RoundTrip(r)
	})
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestLeaderKilledStandbyTakesOver runs two replicas with leader election
// on a Lease of the test's namespace; only the leader reconciles. The
// leader is killed (its transport cut and its context cancelled, the lease
// not released): the standby takes the lease over once it expires and
// reconciles what comes next.
func TestLeaderKilledStandbyTakesOver(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	const leaseName = "steady-testenv-leader"
	replica := func(who string, tr *cuttable, reconciles *atomic.Int64) (ctrl.Manager, context.CancelFunc, chan error) {
		t.Helper()
		mgr, err := env.NewManager(labeler(ns, who, reconciles), testenv.WithTransport(tr.wrap),
			testenv.WithManagerOptions{
				LeaderElection: true, LeaderElectionID: leaseName, LeaderElectionNamespace: ns,
				LeaseDuration: ptr.To(4 * time.Second), RenewDeadline: ptr.To(3 * time.Second), RetryPeriod: ptr.To(500 * time.Millisecond),
			})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("replica %s stopped with an error: %v", who, err)
			}
		})
		return mgr, cancel, done
	}
	elected := func(mgr ctrl.Manager) bool {
		select {
		case <-mgr.Elected():
			return true
		default:
			return false
		}
	}
	var firstTr, secondTr cuttable
	var firstN, secondN atomic.Int64
	first, kill, firstDone := replica("first", &firstTr, &firstN)
	testenv.Eventually(t, "the first replica is elected", func() error {
		if !elected(first) {
			return errors.New("not elected")
		}
		return nil
	})
	second, _, _ := replica("second", &secondTr, &secondN)
	one := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "one"}}
	if err := env.Client.Create(ctx, one); err != nil {
		t.Fatal(err)
	}
	labelledBy(t, client.ObjectKeyFromObject(one), "first")
	if elected(second) || secondN.Load() != 0 {
		t.Fatalf("the standby is elected (%v) or reconciled (%d times) while the leader lives", elected(second), secondN.Load())
	}
	var lease coordinationv1.Lease
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: leaseName}, &lease); err != nil {
		t.Fatal(err)
	}
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")

	// Kill the leader: it sends nothing more, and does not release the lease.
	firstTr.cut.Store(true)
	kill()
	if err := <-firstDone; err != nil {
		t.Fatalf("the killed replica's Start returned %v", err)
	}
	firstDone <- nil // for the cleanup
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: leaseName}, &lease); err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(lease.Spec.HolderIdentity, ""); got != holder || got == "" {
		t.Fatalf("the lease changed hands at the kill, from %q to %q: it was released, not left to expire", holder, got)
	}
	testenv.Eventually(t, "the standby takes the lease over", func() error {
		if !elected(second) {
			return errors.New("not elected")
		}
		return nil
	})
	two := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "two"}}
	if err := env.Client.Create(ctx, two); err != nil {
		t.Fatal(err)
	}
	labelledBy(t, client.ObjectKeyFromObject(two), "second")
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: leaseName}, &lease); err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(lease.Spec.HolderIdentity, ""); got == holder {
		t.Errorf("the lease is still held by the killed replica %q", holder)
	}
}

// TestEtcdKilledAndStarted kills the shared environment's etcd under a
// running manager and starts it again on the same data: while etcd is down a
// read fails; afterwards every object is still there, writes land, the
// manager's watch resumes (a ConfigMap created after the restart reaches its
// cache and its controller), and the controller manager, not restarted,
// still collects garbage and deletes namespaces.
func TestEtcdKilledAndStarted(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	var reconciles atomic.Int64
	mgr := env.StartManager(t, labeler(ns, "manager", &reconciles))
	if _, err := mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{}); err != nil { // a warm cache
		t.Fatal(err)
	}
	before := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "before"}, Data: map[string]string{"written": "before the kill"}}
	if err := env.Client.Create(ctx, before); err != nil {
		t.Fatal(err)
	}
	labelledBy(t, client.ObjectKeyFromObject(before), "manager")
	kcm, err := testenv.ChildProcesses(testenv.ControllerManagerBinary)
	if err != nil || len(kcm) != 1 {
		t.Fatalf("controller manager processes %v (err %v), want one", kcm, err)
	}

	if err := env.KillEtcd(); err != nil {
		t.Fatal(err)
	}
	// The API server runs, but even a read needs etcd: it hangs until the
	// deadline.
	bounded, cancel := context.WithTimeout(ctx, 2*time.Second)
	err = env.Client.Get(bounded, client.ObjectKeyFromObject(before), &corev1.ConfigMap{})
	cancel()
	if err == nil {
		t.Fatal("the API server answered a read with etcd killed")
	}
	start := time.Now()
	if err := env.StartEtcd(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("the API server was ready %v after etcd started again", time.Since(start).Round(time.Millisecond))

	// What etcd had committed survives the kill: the object and the
	// controller's label.
	var got corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(before), &got); err != nil ||
		got.Data["written"] != "before the kill" || got.Labels["by"] != "manager" {
		t.Fatalf("after the restart the API server holds data %v, labels %v (err %v)", got.Data, got.Labels, err)
	}
	// A new write lands, and the manager's watch resumes: its cache sees the
	// write, its controller reconciles it, and the controller's write lands.
	after := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "after"}}
	if err := env.Client.Create(ctx, after); err != nil {
		t.Fatalf("a write after etcd's restart: %v", err)
	}
	testenv.Eventually(t, "the manager's cache sees the ConfigMap created after the restart", func() error {
		return mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(after), &corev1.ConfigMap{})
	})
	labelledBy(t, client.ObjectKeyFromObject(after), "manager")

	// The controller manager was left running, and still works: its garbage
	// collector sees an owner deleted now and collects the child.
	if collected, nsGone := deletionWorks(t, env, 30*time.Second); !collected || !nsGone {
		t.Fatalf("after etcd's restart, within 30s: child collected %v, namespace deleted %v", collected, nsGone)
	}
	if now, err := testenv.ChildProcesses(testenv.ControllerManagerBinary); err != nil || len(now) != 1 || now[0] != kcm[0] {
		t.Errorf("controller manager processes %v (err %v), want %v, not restarted", now, err, kcm)
	}
}

// TestEtcdKilledWithTheAPIServerStopped kills etcd of an environment of its
// own and stops its API server meanwhile (killed, as it cannot shut down
// gracefully without etcd): the API server does not start before etcd does,
// both come back with the data, and Stop with etcd killed returns at once.
func TestEtcdKilledWithTheAPIServerStopped(t *testing.T) {
	env.Require(t) // needs the binaries, as the shared environment does
	if testing.Short() {
		t.Skip("starts a second control plane")
	}
	ctx := context.Background()
	e := testenv.New(testenv.WithControllerManager{})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = e.Stop()
		}
	})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kept"}}
	if err := e.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}

	for range 2 { // the second is a no-op
		if err := e.KillEtcd(); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if err := e.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("StopAPIServer with etcd killed took %v", d)
	}
	if err := e.StartAPIServer(ctx); err == nil || !strings.Contains(err.Error(), "StartEtcd") {
		t.Fatalf("StartAPIServer with etcd killed: %v, want an error naming StartEtcd", err)
	}
	if err := e.StartEtcd(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Fatalf("after etcd and the API server started again: %v", err)
	}

	if err := e.KillEtcd(); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	stopped = true
	if err := e.Stop(); err != nil {
		t.Fatalf("Stop with etcd killed: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Stop with etcd killed took %v", d)
	}
	if pids, err := testenv.ChildProcesses(testenv.EtcdBinary, testenv.APIServerBinary, testenv.ControllerManagerBinary); err != nil || len(pids) != 3 {
		t.Errorf("after Stop, child processes %v (err %v), want only the shared environment's three", pids, err)
	}
}

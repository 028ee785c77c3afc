package cachewait_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/steadyk8s/steady/cachewait"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

var env = testapi.NewEnv()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// startManager starts a manager whose informers (ConfigMaps and Widgets
// started and synced) get every watch event delay late.
func startManager(t testing.TB, delay time.Duration) *testapi.Cached {
	t.Helper()
	return testapi.StartManager(t, env, testapi.ManagerOptions{Delay: delay,
		Informers: []client.Object{&corev1.ConfigMap{}, &testapi.Widget{}}})
}

const replicas = 3

// reconcileChildren is the classic reconciler: count the owner's children
// in the cache, create the missing ones. afterCreate runs after each create.
func reconcileChildren(ctx context.Context, c client.Client, owner *testapi.Widget, afterCreate func(*corev1.ConfigMap) error) error {
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.InNamespace(owner.Namespace), client.MatchingLabels{"owner": owner.Name}); err != nil {
		return err
	}
	for i := len(list.Items); i < replicas; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: owner.Namespace, GenerateName: owner.Name + "-",
			Labels: map[string]string{"owner": owner.Name}}}
		if err := c.Create(ctx, cm); err != nil {
			return err
		}
		if afterCreate != nil {
			if err := afterCreate(cm); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestNoDuplicateChildren runs the reconciler five times back to back, as
// requeues do, over several trials, against a cache that lags 300ms.
func TestNoDuplicateChildren(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, 300*time.Millisecond)
	cached := cc.Client
	const trials, passes = 3, 5
	for _, tc := range []struct {
		name string
		// pass runs one reconcile of owner.
		pass      func(owner *testapi.Widget) error
		wantExact bool
	}{
		{"naive", func(o *testapi.Widget) error { return reconcileChildren(ctx, cached, o, nil) }, false},
		{"ForWrite", func(o *testapi.Widget) error {
			return reconcileChildren(ctx, cached, o, func(cm *corev1.ConfigMap) error { return cachewait.ForWrite(ctx, cached, cm) })
		}, true},
		{"Client", func() func(*testapi.Widget) error {
			c := cachewait.NewClient(cc.Manager)
			return func(o *testapi.Widget) error { return reconcileChildren(ctx, c, o, nil) }
		}(), true},
		{"Tracker", func() func(*testapi.Widget) error {
			tr := cachewait.NewTracker(cc.Manager)
			return func(o *testapi.Widget) error {
				if ok, err := tr.CaughtUp(ctx, o); err != nil || !ok {
					return err // requeue: this pass does nothing
				}
				return reconcileChildren(ctx, cached, o, func(cm *corev1.ConfigMap) error { tr.Wrote(o, cm); return nil })
			}
		}(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			duplicated := 0
			for trial := 0; trial < trials; trial++ {
				owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: fmt.Sprintf("owner-%d", trial)}}
				if err := env.Client.Create(ctx, owner); err != nil {
					t.Fatal(err)
				}
				for p := 0; p < passes; p++ {
					if err := tc.pass(owner); err != nil {
						t.Fatal(err)
					}
					time.Sleep(20 * time.Millisecond)
				}
				var all corev1.ConfigMapList // from the API server, not the cache
				if err := env.Client.List(ctx, &all, client.InNamespace(owner.Namespace), client.MatchingLabels{"owner": owner.Name}); err != nil {
					t.Fatal(err)
				}
				if len(all.Items) > replicas {
					duplicated++
				}
				if tc.wantExact && len(all.Items) != replicas {
					t.Errorf("trial %d: %d children, want %d", trial, len(all.Items), replicas)
				}
			}
			if !tc.wantExact && duplicated == 0 {
				t.Errorf("the naive reconciler never duplicated in %d trials: the cache did not lag, the test proves nothing", trials)
			}
			t.Logf("%d of %d trials duplicated", duplicated, trials)
		})
	}
}

func TestTimeoutIsTypedAndMeansRequeue(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cached := startManager(t, time.Second).Client
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "late"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	err := cachewait.ForWrite(ctx, cached, cm, cachewait.WithTimeout(100*time.Millisecond))
	var te *cachewait.TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ForWrite = %v, want a TimeoutError", err)
	}
	if te.Object != "ConfigMap "+cm.Namespace+"/late" || te.Want != "resourceVersion "+cm.ResourceVersion {
		t.Errorf("TimeoutError = %+v", te)
	}
}

func TestForDelete(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cached := startManager(t, 300*time.Millisecond).Client
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "gone"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := cachewait.ForWrite(ctx, cached, cm); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := cachewait.ForDelete(ctx, cached, cm); err != nil {
		t.Fatal(err)
	}
	if err := cached.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("cache after ForDelete: %v", err)
	}
}

// TestClientReadsItsWrites: the manager's own client, read right after a
// create through NewClient's, does not find it (the cache lags); NewClient's
// does.
func TestClientReadsItsWrites(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	mgr := startManager(t, 300*time.Millisecond).Manager
	c := cachewait.NewClient(mgr)
	ns := env.Namespace(t)
	a := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"}}
	if err := c.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(a), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the manager's Get right after the create: %v; the cache did not lag, the test proves nothing", err)
	}
	var got corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKeyFromObject(a), &got); err != nil || got.ResourceVersion != a.ResourceVersion {
		t.Fatalf("Get after the create: %v, rv %s want %s", err, got.ResourceVersion, a.ResourceVersion)
	}
	got.Data = map[string]string{"k": "v"}
	if err := c.Update(ctx, &got); err != nil {
		t.Fatal(err)
	}
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil || len(list.Items) != 1 || list.Items[0].Data["k"] != "v" {
		t.Fatalf("List after the update: %v, %+v", err, list.Items)
	}
	if err := c.Delete(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(a), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Get after the delete: %v", err)
	}
}

// TestPatcherWaitsForItsOwnPatch shows the reconcile option: without it the
// cache read right after Patch is stale; with it, it is not.
func TestPatcherWaitsForItsOwnPatch(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cached := startManager(t, 300*time.Millisecond).Client
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	for _, wait := range []bool{false, true} {
		if err := cachewait.ForWrite(ctx, cached, w); err != nil {
			t.Fatal(err)
		}
		p, err := reconcile.NewPatcher(cached, w) // WithCacheWait waits on the Patcher's client
		if err != nil {
			t.Fatal(err)
		}
		w.Spec.Size++
		var opts []reconcile.PatchOption
		if wait {
			opts = append(opts, reconcile.WithCacheWait{})
		}
		if err := p.Patch(ctx, w, opts...); err != nil {
			t.Fatal(err)
		}
		var got testapi.Widget
		if err := cached.Get(ctx, client.ObjectKeyFromObject(w), &got); err != nil {
			t.Fatal(err)
		}
		if fresh := got.Spec.Size == w.Spec.Size; fresh != wait {
			t.Errorf("with the cache wait %v: cached read right after Patch fresh = %v", wait, fresh)
		}
	}
}

func TestWaitsAreObserved(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cached := startManager(t, 0).Client
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "m"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := cachewait.ForWrite(ctx, cached, cm); err != nil {
		t.Fatal(err)
	}
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "steady_cachewait_wait_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetHistogram().GetSampleCount() > 0 {
				return
			}
		}
	}
	t.Error("no wait observed in steady_cachewait_wait_seconds")
}

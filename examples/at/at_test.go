package at_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/examples/at"
	"github.com/steadyk8s/steady/examples/at/api/v1alpha1"
	"github.com/steadyk8s/steady/testenv"
)

var env = testenv.New(
	testenv.WithControllerManager{}, // the garbage collector takes the Pods of deleted Ats
	testenv.WithCRDs{Paths: []string{"config/crd"}},
	testenv.WithScheme{Scheme: newScheme()},
)

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := at.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// fakeClock is the controller's clock in tests: time moves only when the test
// says so.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

var controllers atomic.Int64

// startController runs the At controller in a manager (cached client, as in
// production), watching the test's namespace only, and returns it with the
// counter of its API requests.
func startController(t *testing.T, ns string, now func() time.Time) (*controller, *testenv.RequestCounter) {
	t.Helper()
	counter := &testenv.RequestCounter{}
	r := &at.Reconciler{Now: now, Name: fmt.Sprintf("at-%d", controllers.Add(1))}
	mgr := env.StartManager(t,
		testenv.WithTransport(counter.Wrap),
		testenv.WithManagerOptions(ctrl.Options{
			Controller: config.Controller{SkipNameValidation: ptr.To(true)},
			Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		}),
		testenv.WithSetup(r.SetupWithManager))
	for _, obj := range []client.Object{&v1alpha1.At{}, &corev1.Pod{}} { // a warm cache
		if _, err := mgr.GetCache().GetInformer(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	return &controller{Reconciler: r, cache: mgr.GetClient()}, counter
}

// controller is the Reconciler under test with its manager's cached client.
type controller struct {
	*at.Reconciler
	cache client.Client
}

// reconciles is how many times the named controller reconciled, from
// controller-runtime's controller_runtime_reconcile_total.
func reconciles(t *testing.T, controller string) int {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					n += int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return n
}

func getAt(ctx context.Context, key types.NamespacedName) (*v1alpha1.At, error) {
	a := &v1alpha1.At{}
	return a, env.Client.Get(ctx, key, a)
}

// wantAt checks the phase and the status and reason of conditions.
func wantAt(ctx context.Context, key types.NamespacedName, phase v1alpha1.Phase, conds map[string][2]string) func() error {
	return func() error {
		a, err := getAt(ctx, key)
		if err != nil {
			return err
		}
		if a.Status.Phase != phase {
			return fmt.Errorf("phase %q, want %q (conditions %+v)", a.Status.Phase, phase, a.Status.Conditions)
		}
		if a.Status.ObservedGeneration != a.Generation {
			return fmt.Errorf("observedGeneration %d, generation %d", a.Status.ObservedGeneration, a.Generation)
		}
		for typ, sr := range conds {
			c := conditions.Get(a, typ)
			switch {
			case sr[0] == "" && c != nil:
				return fmt.Errorf("condition %s present: %+v", typ, c)
			case sr[0] == "":
			case c == nil:
				return fmt.Errorf("condition %s missing", typ)
			case string(c.Status) != sr[0] || c.Reason != sr[1]:
				return fmt.Errorf("condition %s is %s/%s, want %s/%s", typ, c.Status, c.Reason, sr[0], sr[1])
			}
		}
		return nil
	}
}

// assertNoWrites calls Reconcile directly three times on a converged At and
// fails on any write.
func assertNoWrites(ctx context.Context, t *testing.T, r *controller, counter *testenv.RequestCounter, key types.NamespacedName) ctrl.Result {
	t.Helper()
	// Converged means the cache has caught up too: the reconciler reads it.
	testenv.Eventually(t, "cache caught up", func() error {
		live, err := getAt(ctx, key)
		if err != nil {
			return err
		}
		cached := &v1alpha1.At{}
		if err := r.cache.Get(ctx, key, cached); err != nil {
			return err
		}
		if cached.ResourceVersion != live.ResourceVersion {
			return fmt.Errorf("cache at resourceVersion %s, API server at %s", cached.ResourceVersion, live.ResourceVersion)
		}
		return nil
	})
	testenv.WaitIdle(t, r.Name)
	counter.Reset()
	var res ctrl.Result
	for range 3 {
		var err error
		if res, err = r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	if w := counter.Writes(); w != 0 {
		t.Fatalf("3 reconciles of a converged At wrote %d times: %s", w, counter)
	}
	t.Logf("3 reconciles of a converged At: %d writes, requests: %q", counter.Writes(), counter.String())
	return res
}

// addForeign adds another controller's finalizer and condition to the At.
func addForeign(ctx context.Context, t *testing.T, key types.NamespacedName) {
	t.Helper()
	a, err := getAt(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	controllerutil.AddFinalizer(a, "example.com/keep")
	if err := env.Client.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	a.Status.Conditions = append(a.Status.Conditions, metav1.Condition{
		Type: "example.com/Audited", Status: metav1.ConditionTrue, Reason: "Audited", LastTransitionTime: metav1.Now(),
	})
	if err := env.Client.Status().Update(ctx, a); err != nil {
		t.Fatal(err)
	}
}

func checkForeign(ctx context.Context, t *testing.T, key types.NamespacedName) {
	t.Helper()
	a, err := getAt(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if !controllerutil.ContainsFinalizer(a, "example.com/keep") {
		t.Errorf("foreign finalizer lost: %v", a.Finalizers)
	}
	if !conditions.IsTrue(a, "example.com/Audited") {
		t.Errorf("foreign condition lost: %+v", a.Status.Conditions)
	}
}

// releaseFinalizer removes the foreign finalizer, as its owner would.
func releaseFinalizer(ctx context.Context, t *testing.T, key types.NamespacedName) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		a, err := getAt(ctx, key)
		if err != nil {
			return err
		}
		controllerutil.RemoveFinalizer(a, "example.com/keep")
		return env.Client.Update(ctx, a)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func setPodPhase(ctx context.Context, t *testing.T, key types.NamespacedName, phase corev1.PodPhase) {
	t.Helper()
	pod := &corev1.Pod{}
	if err := env.Client.Get(ctx, key, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = phase // envtest has no kubelet: the test plays it
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
}

// TestAtLifecycle drives an At through PENDING, RUNNING and DONE on an
// injected clock, for a Pod that succeeds and one that fails.
func TestAtLifecycle(t *testing.T) {
	for _, tc := range []struct {
		podPhase corev1.PodPhase
		reason   string
	}{
		{corev1.PodSucceeded, "Succeeded"},
		{corev1.PodFailed, "Failed"},
	} {
		t.Run(string(tc.podPhase), func(t *testing.T) {
			ctx := t.Context()
			ns := env.Namespace(t)
			t0 := time.Date(2019, 4, 12, 9, 12, 0, 0, time.UTC)
			clock := &fakeClock{now: t0}
			r, counter := startController(t, ns, clock.Now)

			a := &v1alpha1.At{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello"},
				Spec:       v1alpha1.AtSpec{Schedule: "2019-04-12T10:12Z", Command: "echo hello"},
			}
			if err := env.Client.Create(ctx, a); err != nil {
				t.Fatal(err)
			}
			key := client.ObjectKeyFromObject(a)
			podKey := types.NamespacedName{Namespace: ns, Name: "hello-pod"}

			// PENDING: scheduled, nothing runs yet.
			testenv.Eventually(t, "pending", wantAt(ctx, key, v1alpha1.PhasePending, map[string][2]string{
				v1alpha1.ConditionScheduled: {"True", "Scheduled"},
				v1alpha1.ConditionDone:      {"False", "Pending"},
				conditions.Ready:            {"False", "Pending"},
				conditions.Stalled:          {},
			}))
			if err := env.Client.Get(ctx, podKey, &corev1.Pod{}); !apierrors.IsNotFound(err) {
				t.Fatalf("Pod before the scheduled time: %v", err)
			}
			// No polling: the reconcile asks to come back exactly when it is time.
			if res := assertNoWrites(ctx, t, r, counter, key); res.RequeueAfter != time.Hour {
				t.Fatalf("pending At: RequeueAfter %v, want 1h", res.RequeueAfter)
			}
			addForeign(ctx, t, key)

			// The time comes. The manager's timer would fire in an hour
			// of real time; a direct Reconcile stands in for it (the
			// real-time path is TestAtRunsWithoutPolling).
			clock.Set(t0.Add(time.Hour))
			if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, "running", wantAt(ctx, key, v1alpha1.PhaseRunning, map[string][2]string{
				v1alpha1.ConditionRunning: {"True", "PodRunning"},
				v1alpha1.ConditionDone:    {"False", "Running"},
				conditions.Ready:          {"False", "Running"},
			}))
			pod := &corev1.Pod{}
			if err := env.Client.Get(ctx, podKey, pod); err != nil {
				t.Fatal(err)
			}
			if got, _ := getAt(ctx, key); !metav1.IsControlledBy(pod, got) {
				t.Fatalf("Pod not controlled by the At: %+v", pod.OwnerReferences)
			}
			if c := pod.Spec.Containers; len(c) != 1 || c[0].Image != at.DefaultImage || fmt.Sprint(c[0].Command) != "[sh -c echo hello]" {
				t.Fatalf("Pod containers %+v", c)
			}
			assertNoWrites(ctx, t, r, counter, key)

			// The Pod ends: DONE, and it stays DONE.
			setPodPhase(ctx, t, podKey, tc.podPhase)
			testenv.Eventually(t, "done", wantAt(ctx, key, v1alpha1.PhaseDone, map[string][2]string{
				v1alpha1.ConditionRunning: {"False", "Completed"},
				v1alpha1.ConditionDone:    {"True", tc.reason},
				conditions.Ready:          {"True", tc.reason},
			}))
			if res := assertNoWrites(ctx, t, r, counter, key); res != (ctrl.Result{}) {
				t.Fatalf("done At: %+v, want no requeue", res)
			}
			checkForeign(ctx, t, key)

			// Deletion: no finalizer of ours is left behind; once the
			// foreign one is released the At goes and the garbage collector
			// takes its Pod.
			if err := env.Client.Delete(ctx, a); err != nil {
				t.Fatal(err)
			}
			got, err := getAt(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if fin := got.Finalizers; len(fin) != 1 || fin[0] != "example.com/keep" {
				t.Fatalf("finalizers of the deleted At: %v, want only the foreign one", fin)
			}
			releaseFinalizer(ctx, t, key)
			testenv.Eventually(t, "At gone", func() error {
				if _, err := getAt(ctx, key); !apierrors.IsNotFound(err) {
					return fmt.Errorf("At still there: %v", err)
				}
				return nil
			})
			testenv.Eventually(t, "Pod collected", func() error {
				if err := env.Client.Get(ctx, podKey, &corev1.Pod{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("Pod still there: %v", err)
				}
				return nil
			})
		})
	}
}

// TestAtMalformedScheduleStalls: a malformed schedule is Stalled, with no error
// and no requeue; fixing it removes Stalled and runs the command.
func TestAtMalformedScheduleStalls(t *testing.T) {
	ctx := t.Context()
	ns := env.Namespace(t)
	t0 := time.Date(2019, 4, 12, 9, 12, 0, 0, time.UTC)
	clock := &fakeClock{now: t0}
	r, counter := startController(t, ns, clock.Now)

	a := &v1alpha1.At{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "typo"},
		Spec:       v1alpha1.AtSpec{Schedule: "tomorrow at noon", Command: "echo hi"},
	}
	if err := env.Client.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(a)
	testenv.Eventually(t, "stalled", wantAt(ctx, key, v1alpha1.PhasePending, map[string][2]string{
		conditions.Stalled:          {"True", at.ReasonInvalidSchedule},
		v1alpha1.ConditionScheduled: {"False", at.ReasonInvalidSchedule},
		conditions.Ready:            {"False", at.ReasonInvalidSchedule},
	}))
	// Not a failure to retry: no error, no requeue, no write.
	if res := assertNoWrites(ctx, t, r, counter, key); res != (ctrl.Result{}) {
		t.Fatalf("stalled At: %+v, want no requeue", res)
	}
	before := reconciles(t, r.Name)

	// Meanwhile a valid At comes and converges on the same controller: the
	// stalled one is not reconciled again in the meantime (a hot retry
	// loop, even with backoff, would have been).
	other := &v1alpha1.At{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "later"},
		Spec:       v1alpha1.AtSpec{Schedule: "2019-04-12T10:12:00Z", Command: "echo later"},
	}
	if err := env.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "other pending", wantAt(ctx, client.ObjectKeyFromObject(other), v1alpha1.PhasePending, map[string][2]string{
		v1alpha1.ConditionScheduled: {"True", "Scheduled"},
	}))

	// Removal converges: fixing the schedule (now in the past) removes
	// Stalled and runs the command.
	got, err := getAt(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	got.Spec.Schedule = "2019-04-12T09:00:00Z"
	if err := env.Client.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "fixed", wantAt(ctx, key, v1alpha1.PhaseRunning, map[string][2]string{
		conditions.Stalled:          {},
		v1alpha1.ConditionScheduled: {"True", "Scheduled"},
		v1alpha1.ConditionRunning:   {"True", "PodRunning"},
	}))
	n := reconciles(t, r.Name) - before
	t.Logf("reconciles from the stall to the fix having converged (two Ats): %d", n)
	if n > 8 {
		t.Fatalf("%d reconciles while one At was stalled and another was created: a retry loop?", n)
	}
}

// TestAtRunsWithoutPolling runs on the real clock: an At due in two seconds
// gets its Pod with nothing else happening, woken only by its RequeueAfter.
func TestAtRunsWithoutPolling(t *testing.T) {
	ctx := t.Context()
	ns := env.Namespace(t)
	r, _ := startController(t, ns, nil)

	when := time.Now().Add(2 * time.Second).UTC().Truncate(time.Second)
	a := &v1alpha1.At{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "soon"},
		Spec:       v1alpha1.AtSpec{Schedule: when.Format(time.RFC3339), Command: "date"},
	}
	if err := env.Client.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "Pod created at the scheduled time", func() error {
		pod := &corev1.Pod{}
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "soon-pod"}, pod); err != nil {
			return err
		}
		if pod.CreationTimestamp.Time.Before(when) {
			t.Fatalf("Pod created at %v, before its schedule %v", pod.CreationTimestamp, when)
		}
		return nil
	})
	testenv.Eventually(t, "running", wantAt(ctx, client.ObjectKeyFromObject(a), v1alpha1.PhaseRunning, nil))
	// Create, the timer, the Pod's creation: a handful, not a poll.
	if n := reconciles(t, r.Name); n > 5 {
		t.Fatalf("%d reconciles for one At: polling?", n)
	}
}

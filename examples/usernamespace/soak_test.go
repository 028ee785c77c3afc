package usernamespace_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/testenv"

	"github.com/steadyk8s/steady/examples/usernamespace"
	identityv1alpha1 "github.com/steadyk8s/steady/examples/usernamespace/api/v1alpha1"
)

// soakSize is the smoke that make test runs, or, with STEADY_SOAK=1 (make
// soak), the soak.
type soakSize struct {
	users, churners int
	churn, quiet    time.Duration
}

func soakSizeFromEnv() soakSize {
	if os.Getenv("STEADY_SOAK") == "1" {
		return soakSize{users: 30, churners: 4, churn: 90 * time.Second, quiet: 30 * time.Second}
	}
	return soakSize{users: 6, churners: 2, churn: 12 * time.Second, quiet: 5 * time.Second}
}

// faults answers a share of the manager's writes with a 500, a 409 or a
// 429 before they reach the API server, or lets one through and loses its
// answer (a timeout after the write), while on.
type faults struct {
	on     atomic.Bool
	rate   float64
	mu     sync.Mutex
	rng    *rand.Rand
	counts map[string]int
}

func (f *faults) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		if !f.on.Load() || r.Method == http.MethodGet {
			return rt.RoundTrip(r)
		}
		f.mu.Lock()
		hit := f.rng.Float64() < f.rate
		kind := []string{"500", "409", "429", "lost answer"}[f.rng.IntN(4)]
		if hit {
			f.counts[kind]++
		}
		f.mu.Unlock()
		if !hit {
			return rt.RoundTrip(r)
		}
		if kind == "lost answer" {
			resp, err := rt.RoundTrip(r)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			return nil, errors.New("soak: connection lost after the request was sent")
		}
		code, _ := strconv.Atoi(kind)
		reason := map[int]metav1.StatusReason{500: metav1.StatusReasonInternalError, 409: metav1.StatusReasonConflict,
			429: metav1.StatusReasonTooManyRequests}[code]
		body := fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":%q,"code":%d,"message":"soak: injected"}`, reason, code)
		h := http.Header{"Content-Type": {"application/json"}}
		if code == 429 {
			h.Set("Retry-After", "0")
		}
		return &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(bytes.NewBufferString(body)), Request: r}, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestSoak: Users churn (created, their groups and quota changed and
// removed, deleted, recreated under the same name) from several goroutines
// while a share of the manager's writes fail, its cache lags 300ms, another
// writer labels, annotates, conditions and finalizes the Users, and the
// manager is replaced by a new one halfway. Once churn and faults stop:
// every User is Ready at its generation with its children exactly as its
// spec says, no child of a deleted User is left, the other writer's data is
// intact, and nothing is written in a quiet window. make test runs a smoke;
// make soak (STEADY_SOAK=1) the soak.
func TestSoak(t *testing.T) {
	env.Require(t)
	size := soakSizeFromEnv()
	ctx := context.Background()
	prefix := fmt.Sprintf("soak%d", seq.Add(1))
	names := make([]string, size.users)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	f := &faults{rate: 0.05, rng: rand.New(rand.NewPCG(1, 2)), counts: map[string]int{}}
	var ops sync.Map // kind -> *atomic.Int64
	count := func(kind string) {
		v, _ := ops.LoadOrStore(kind, &atomic.Int64{})
		v.(*atomic.Int64).Add(1)
	}
	// The other writer's marks, by User UID.
	var marked sync.Map
	const otherLabel, otherFinalizer = "example.com/audited", "example.com/audit"

	churn := func(d time.Duration, seed uint64) {
		var wg sync.WaitGroup
		stop := time.Now().Add(d)
		for g := range size.churners {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(seed, uint64(g)))
				for time.Now().Before(stop) {
					name := names[rng.IntN(len(names))]
					u := &identityv1alpha1.User{}
					err := env.Client.Get(ctx, types.NamespacedName{Name: name}, u)
					switch {
					case apierrors.IsNotFound(err):
						u = &identityv1alpha1.User{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: randomSpec(rng)}
						if env.Client.Create(ctx, u) == nil {
							count("create")
						}
					case err != nil || !u.DeletionTimestamp.IsZero():
					case rng.IntN(4) == 0:
						if env.Client.Delete(ctx, u) == nil {
							count("delete")
						}
					default:
						u.Spec = randomSpec(rng)
						if env.Client.Update(ctx, u) == nil {
							count("update")
						}
					}
					time.Sleep(time.Duration(20+rng.IntN(80)) * time.Millisecond)
				}
			})
		}
		// The other writer.
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, 99))
			for time.Now().Before(stop) {
				name := names[rng.IntN(len(names))]
				err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
					u := &identityv1alpha1.User{}
					if err := env.Client.Get(ctx, types.NamespacedName{Name: name}, u); err != nil || !u.DeletionTimestamp.IsZero() {
						return client.IgnoreNotFound(err)
					}
					if u.Labels == nil {
						u.Labels = map[string]string{}
					}
					u.Labels[otherLabel] = "yes"
					if !slices.Contains(u.Finalizers, otherFinalizer) {
						u.Finalizers = append(u.Finalizers, otherFinalizer)
					}
					if err := env.Client.Update(ctx, u); err != nil {
						return err
					}
					conditions.MarkTrue(u, foreignCondition, "Audited", "by the soak")
					if err := env.Client.Status().Update(ctx, u); err != nil {
						return err
					}
					marked.Store(u.UID, name)
					return nil
				})
				if err == nil {
					count("other writer")
				}
				time.Sleep(time.Duration(50+rng.IntN(100)) * time.Millisecond)
			}
		})
		wg.Wait()
	}

	counter := &testenv.RequestCounter{}
	startManager := func(t *testing.T) {
		env.StartManager(t,
			testenv.WithTransport(func(rt http.RoundTripper) http.RoundTripper { return counter.Wrap(f.wrap(rt)) }),
			testenv.WithTransport(testenv.DelayWatches(300*time.Millisecond)),
			// Three workers on the rate-limited queue: v0.24's priority queue
			// can hang the manager's stop (docs/compatibility.md), which
			// StartManager reports as the manager's error.
			testenv.WithManagerOptions{Controller: config.Controller{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: 3, UsePriorityQueue: ptr.To(false)}},
			testenv.WithSetup(func(mgr ctrl.Manager) error {
				r := &usernamespace.Reconciler{Client: mgr.GetClient(), Name: fmt.Sprintf("user-%d", seq.Add(1))}
				return r.SetupWithManager(mgr)
			}))
	}
	f.on.Store(true)
	t.Run("first manager", func(t *testing.T) {
		startManager(t)
		churn(size.churn/2, 1)
	}) // its manager stops here, mid-churn for the Users it left behind
	t.Run("second manager", func(t *testing.T) {
		startManager(t)
		churn(size.churn/2, 2)
		f.on.Store(false)
		// The other writer takes its finalizer off at the end.
		for _, name := range names {
			_ = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				u := &identityv1alpha1.User{}
				if err := env.Client.Get(ctx, types.NamespacedName{Name: name}, u); err != nil {
					return client.IgnoreNotFound(err)
				}
				if !slices.Contains(u.Finalizers, otherFinalizer) {
					return nil
				}
				u.Finalizers = slices.DeleteFunc(u.Finalizers, func(s string) bool { return s == otherFinalizer })
				return env.Client.Update(ctx, u)
			})
		}
		var violations []string
		testenv.Eventually(t, "every User converged, no child of a gone User left", func() error {
			violations = soakViolations(ctx, names, &marked, otherLabel)
			if len(violations) > 0 {
				return fmt.Errorf("%d violations, first: %s", len(violations), violations[0])
			}
			return nil
		}, 3*time.Minute)
		counter.Reset()
		time.Sleep(size.quiet)
		if w := counter.Writes(); w != 0 {
			t.Errorf("%d writes in a quiet window of %s (%s)", w, size.quiet, counter)
		}
		var summary []string
		ops.Range(func(k, v any) bool {
			summary = append(summary, fmt.Sprintf("%s=%d", k, v.(*atomic.Int64).Load()))
			return true
		})
		slices.Sort(summary)
		f.mu.Lock()
		t.Logf("soak: %d users, %s of churn; operations %s; faults injected %v; violations %d",
			size.users, size.churn, strings.Join(summary, " "), f.counts, len(violations))
		f.mu.Unlock()
	})
}

func randomSpec(rng *rand.Rand) identityv1alpha1.UserSpec {
	var s identityv1alpha1.UserSpec
	for i := range rng.IntN(3) {
		s.Groups = append(s.Groups, fmt.Sprintf("group-%d", i))
	}
	if rng.IntN(2) == 0 {
		s.ResourceQuota = corev1.ResourceList{corev1.ResourcePods: resource.MustParse(strconv.Itoa(5 + rng.IntN(5)))}
	}
	s.ClusterRole = "edit"
	return s
}

// soakViolations checks every User name against what the API server holds.
func soakViolations(ctx context.Context, names []string, marked *sync.Map, otherLabel string) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for _, name := range names {
		nsName := usernamespace.NamespaceName(name)
		u := &identityv1alpha1.User{}
		err := env.Client.Get(ctx, types.NamespacedName{Name: name}, u)
		ns := &corev1.Namespace{}
		nsErr := env.Client.Get(ctx, types.NamespacedName{Name: nsName}, ns)
		if apierrors.IsNotFound(err) {
			if nsErr == nil {
				bad("User %s is gone, its namespace is left (deleting: %v)", name, !ns.DeletionTimestamp.IsZero())
			}
			continue
		}
		if err != nil || nsErr != nil && !apierrors.IsNotFound(nsErr) {
			bad("reading %s: %v %v", name, err, nsErr)
			continue
		}
		if !u.DeletionTimestamp.IsZero() {
			bad("User %s still deleting with finalizers %v", name, u.Finalizers)
			continue
		}
		ready := conditions.Get(u, conditions.Ready)
		if ready == nil || ready.Status != metav1.ConditionTrue || u.Status.ObservedGeneration != u.Generation {
			bad("User %s: Ready %+v, observedGeneration %d of %d", name, ready, u.Status.ObservedGeneration, u.Generation)
			continue
		}
		if nsErr != nil || !metav1.IsControlledBy(ns, u) {
			bad("User %s: namespace %s missing or not controlled by it", name, nsName)
			continue
		}
		rb := &rbacv1.RoleBinding{}
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: nsName, Name: usernamespace.RoleBindingName}, rb); err != nil {
			bad("User %s: RoleBinding: %v", name, err)
		} else {
			var got []string
			for _, s := range rb.Subjects[1:] {
				got = append(got, s.Name)
			}
			if !slices.Equal(got, u.Spec.Groups) {
				bad("User %s: RoleBinding groups %v, spec %v", name, got, u.Spec.Groups)
			}
		}
		rq := &corev1.ResourceQuota{}
		rqErr := env.Client.Get(ctx, types.NamespacedName{Namespace: nsName, Name: usernamespace.ResourceQuotaName}, rq)
		switch {
		case len(u.Spec.ResourceQuota) > 0 && rqErr != nil:
			bad("User %s: ResourceQuota missing: %v", name, rqErr)
		case len(u.Spec.ResourceQuota) > 0 && !rq.Spec.Hard.Pods().Equal(*u.Spec.ResourceQuota.Pods()):
			bad("User %s: ResourceQuota pods %s, spec %s", name, rq.Spec.Hard.Pods(), u.Spec.ResourceQuota.Pods())
		case len(u.Spec.ResourceQuota) == 0 && rqErr == nil:
			bad("User %s: ResourceQuota left after its removal from the spec", name)
		}
		if _, ok := marked.Load(u.UID); ok {
			if u.Labels[otherLabel] != "yes" || !conditions.IsTrue(u, foreignCondition) {
				bad("User %s: the other writer's label or condition lost (labels %v)", name, u.Labels)
			}
		}
	}
	return out
}

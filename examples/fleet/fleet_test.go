package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/multicluster/fleettest"
	"github.com/steadyk8s/steady/testenv"

	"github.com/steadyk8s/steady/examples/fleet"
	"github.com/steadyk8s/steady/examples/usernamespace"
	identityv1alpha1 "github.com/steadyk8s/steady/examples/usernamespace/api/v1alpha1"
)

// members are the fleet's three control planes: no controller manager,
// since nothing here is deleted.
var members = testenv.NewFleet(3,
	testenv.WithCRDs{Paths: []string{"../usernamespace/config/crd"}},
	testenv.WithScheme{Scheme: newScheme()},
)

func TestMain(m *testing.M) { os.Exit(members.Run(m)) }

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := usernamespace.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

const (
	timeout    = 60 * time.Second
	controller = "fleet-user"
)

// roles is the ClusterRole each member's User asks for: the same User
// name, a different spec in every cluster.
var roles = []string{"view", "edit", "admin"}

// TestFleet runs the User controller over the three members: two join at
// the start, the third later; one leaves and joins again; one becomes
// unreachable. Its subtests run in order, each from the state the one
// before left.
func TestFleet(t *testing.T) {
	members.Require(t)
	ctx := context.Background()
	counters := make([]*testenv.RequestCounter, len(members.Members))
	for i := range counters {
		counters[i] = &testenv.RequestCounter{}
	}
	// hang[i] makes member i's cluster answer no write: the request
	// waits until its context ends, as with an API server that hangs.
	hang := make([]atomic.Bool, len(members.Members))
	p := fleettest.NewProvider(members, fleettest.WithTransport(func(i int, rt http.RoundTripper) http.RoundTripper {
		return counters[i].Wrap(hangWrites(&hang[i], rt))
	}))
	// The manager's own (host) requests go to member 0: counted there too.
	host := rest.CopyConfig(members.Members[0].Config)
	host.Wrap(counters[0].Wrap)
	mgr, err := mcmanager.New(host, p, mcmanager.Options{
		Scheme:     members.Members[0].Scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := fleet.SetupWithManager(mgr, fleet.Options{Name: controller, MaxConcurrentReconciles: 2,
		ReconciliationTimeout: reconcileTimeout})
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		cancel()
		var err error
		select {
		case err = <-done:
		case <-time.After(20 * time.Second):
			// Still stopping: say what every goroutine waits on before
			// the manager's own timeout ends the wait without a reason.
			buf := make([]byte, 1<<22)
			t.Logf("the manager has not stopped 20s after its context ended; goroutines:\n%s", buf[:goruntime.Stack(buf, true)])
			err = <-done
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("manager: %v", err)
		}
	})
	// The same User in every member, each with its own role; members 0
	// and 1 join now, member 2 later.
	for i := range members.Members {
		createUser(t, i, "alice", roles[i])
	}
	if err := p.Join(ctx, 0, 1); err != nil {
		t.Fatal(err)
	}

	t.Run("each cluster converges on its own", func(t *testing.T) {
		for _, i := range []int{0, 1} {
			waitConverged(t, i, "alice")
		}
	})

	t.Run("no write lands in another cluster", func(t *testing.T) {
		testenv.WaitIdle(t, controller)
		resetAll(counters)
		createUser(t, 0, "bob", "view")
		waitConverged(t, 0, "bob")
		for _, i := range []int{1, 2} {
			if w := counters[i].Writes(); w != 0 {
				t.Errorf("member %d: %d writes (%s) while member 0's User was reconciled", i, w, counters[i])
			}
			if err := get(i, client.ObjectKey{Name: usernamespace.NamespaceName("bob")}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
				t.Errorf("member %d: bob's namespace: %v, want NotFound", i, err)
			}
		}
		if counters[0].Writes() == 0 {
			t.Error("member 0: no writes counted: the counter does not see the cluster's requests")
		}
	})

	t.Run("0 writes at rest in every cluster", func(t *testing.T) {
		testenv.WaitIdle(t, controller)
		resetAll(counters)
		testenv.WaitIdle(t, controller, 2*time.Second)
		for i, c := range counters {
			if w := c.Writes(); w != 0 {
				t.Errorf("member %d: %d writes at rest (%s)", i, w, c)
			}
		}
	})

	t.Run("a cluster that joins at runtime is reconciled", func(t *testing.T) {
		if u := getUser(t, 2, "alice"); len(u.Status.Conditions) != 0 {
			t.Fatalf("member 2's User was reconciled before it joined: %v", u.Status.Conditions)
		}
		if err := p.Join(ctx, 2); err != nil {
			t.Fatal(err)
		}
		waitConverged(t, 2, "alice")
		if n := r.Clusters(); n != 3 {
			t.Errorf("the reconciler serves %d clusters, want 3", n)
		}
	})

	t.Run("a cluster that leaves stops being reconciled", func(t *testing.T) {
		p.Leave(1)
		testenv.Eventually(t, "member 1 disengaged", func() error {
			if n := r.Clusters(); n != 2 {
				return fmt.Errorf("the reconciler serves %d clusters", n)
			}
			return nil
		}, timeout)
		resetAll(counters)
		createUser(t, 1, "carol", "view")
		// A User made after carol in a member still in the fleet converges:
		// the controller had time for carol too.
		createUser(t, 0, "carol", "view")
		waitConverged(t, 0, "carol")
		testenv.WaitIdle(t, controller)
		if u := getUser(t, 1, "carol"); len(u.Status.Conditions) != 0 {
			t.Errorf("member 1's User was reconciled after it left: %v", u.Status.Conditions)
		}
		if n := counters[1].Get("GET") + counters[1].Get("LIST") + counters[1].Get("WATCH") + counters[1].Writes(); n != 0 {
			t.Errorf("member 1: %s after it left, want no request", counters[1])
		}
		// Joining again under the same name is a new cluster: reconciled.
		if err := p.Join(ctx, 1); err != nil {
			t.Fatal(err)
		}
		waitConverged(t, 1, "carol")
	})

	t.Run("an unreachable cluster does not stall the others", func(t *testing.T) {
		createUser(t, 2, "dave", "view")
		if err := members.Members[2].Kill(); err != nil { // its etcd and API server, at once
			t.Fatal(err)
		}
		for _, i := range []int{0, 1} {
			createUser(t, i, "dave", "edit")
		}
		for _, i := range []int{0, 1} {
			waitConverged(t, i, "dave")
		}
		p.Leave(2)
	})

	t.Run("a cluster that hangs holds a worker only until the reconcile times out", func(t *testing.T) {
		// More Users than workers in the hanging member: without a
		// timeout, every worker would wait on it forever.
		hang[1].Store(true)
		defer hang[1].Store(false)
		for n := range 3 {
			createUser(t, 1, fmt.Sprintf("erin-%d", n), "view")
		}
		createUser(t, 0, "erin", "edit")
		waitConverged(t, 0, "erin")
	})
}

// reconcileTimeout bounds each reconcile of the suite's controller.
const reconcileTimeout = 3 * time.Second

// hangWrites wraps rt so that, while hang holds, a write waits until its
// request's context ends instead of reaching the API server.
func hangWrites(hang *atomic.Bool, rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if hang.Load() && r.Method != http.MethodGet {
			<-r.Context().Done()
			return nil, r.Context().Err()
		}
		return rt.RoundTrip(r)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func resetAll(counters []*testenv.RequestCounter) {
	for _, c := range counters {
		c.Reset()
	}
}

func get(member int, key client.ObjectKey, obj client.Object) error {
	return members.Members[member].Client.Get(context.Background(), key, obj)
}

func createUser(t *testing.T, member int, name, role string) {
	t.Helper()
	u := &identityv1alpha1.User{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: identityv1alpha1.UserSpec{ClusterRole: role}}
	if err := members.Members[member].Client.Create(context.Background(), u); err != nil {
		t.Fatalf("member %d: %v", member, err)
	}
}

func getUser(t *testing.T, member int, name string) *identityv1alpha1.User {
	t.Helper()
	u := &identityv1alpha1.User{}
	if err := get(member, client.ObjectKey{Name: name}, u); err != nil {
		t.Fatalf("member %d: %v", member, err)
	}
	return u
}

// waitConverged waits until member's User is Ready for its generation and
// its children are those of that member's User: its own UID, its own role.
func waitConverged(t *testing.T, member int, name string) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("member %d: User %s converged", member, name), func() error {
		u := &identityv1alpha1.User{}
		if err := get(member, client.ObjectKey{Name: name}, u); err != nil {
			return err
		}
		if c := conditions.Get(u, conditions.Ready); c == nil || c.Status != metav1.ConditionTrue || u.Status.ObservedGeneration != u.Generation {
			return fmt.Errorf("Ready %+v, observedGeneration %d of %d", c, u.Status.ObservedGeneration, u.Generation)
		}
		nsName := usernamespace.NamespaceName(name)
		ns, rb := &corev1.Namespace{}, &rbacv1.RoleBinding{}
		if err := get(member, client.ObjectKey{Name: nsName}, ns); err != nil {
			return err
		}
		if err := get(member, client.ObjectKey{Namespace: nsName, Name: usernamespace.RoleBindingName}, rb); err != nil {
			return err
		}
		for _, o := range []client.Object{ns, rb} {
			if !metav1.IsControlledBy(o, u) {
				return fmt.Errorf("%T %s is not controlled by this member's User (UID %s): %v", o, o.GetName(), u.UID, o.GetOwnerReferences())
			}
		}
		if rb.RoleRef.Name != u.Spec.ClusterRole {
			return fmt.Errorf("RoleBinding binds %s, this member's User asks for %s", rb.RoleRef.Name, u.Spec.ClusterRole)
		}
		return nil
	}, timeout)
}

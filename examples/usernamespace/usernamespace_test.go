package usernamespace_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
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

var env = testenv.New(
	testenv.WithControllerManager{},
	testenv.WithCRDs{Paths: []string{"config/crd"}},
	testenv.WithScheme{Scheme: newScheme()},
)

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

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
	timeout          = 90 * time.Second
	foreignFinalizer = "example.com/keep"
	foreignCondition = "example.com/Audited"
)

var seq atomic.Int32

// start runs the User controller in a manager, as main does.
func start(t *testing.T) (*usernamespace.Reconciler, *testenv.RequestCounter) {
	t.Helper()
	var r *usernamespace.Reconciler
	counter := &testenv.RequestCounter{}
	env.StartManager(t,
		testenv.WithTransport(counter.Wrap),
		testenv.WithManagerOptions{Controller: config.Controller{SkipNameValidation: ptr.To(true)}},
		testenv.WithSetup(func(mgr ctrl.Manager) error {
			r = &usernamespace.Reconciler{Client: mgr.GetClient(),
				Name: fmt.Sprintf("user-%d", seq.Add(1))}
			return r.SetupWithManager(mgr)
		}))
	return r, counter
}

// userName makes a cluster-unique User name.
func userName(t *testing.T) string {
	n := strings.ToLower(strings.TrimPrefix(t.Name(), "Test"))
	if len(n) > 30 {
		n = n[:30]
	}
	return fmt.Sprintf("%s-%d", n, seq.Add(1))
}

func eventually(t *testing.T, what string, check func(ctx context.Context) error) {
	t.Helper()
	testenv.Eventually(t, what, func() error { return check(context.Background()) }, timeout)
}

func getUser(ctx context.Context, name string) (*identityv1alpha1.User, error) {
	u := &identityv1alpha1.User{}
	return u, env.Client.Get(ctx, types.NamespacedName{Name: name}, u)
}

func updateUser(t *testing.T, name string, status bool, change func(*identityv1alpha1.User)) {
	t.Helper()
	ctx := context.Background()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := getUser(ctx, name)
		if err != nil {
			return err
		}
		change(u)
		if status {
			return env.Client.Status().Update(ctx, u)
		}
		return env.Client.Update(ctx, u)
	}); err != nil {
		t.Fatal(err)
	}
}

// waitReady waits until the User's status is for its generation, with the
// Ready status and reason given.
func waitReady(t *testing.T, name string, ready metav1.ConditionStatus, reason string) *identityv1alpha1.User {
	t.Helper()
	var u *identityv1alpha1.User
	eventually(t, "User "+name+" reconciled", func(ctx context.Context) error {
		var err error
		if u, err = getUser(ctx, name); err != nil {
			return err
		}
		if u.Status.ObservedGeneration != u.Generation {
			return fmt.Errorf("observedGeneration %d, generation %d", u.Status.ObservedGeneration, u.Generation)
		}
		c := conditions.Get(u, conditions.Ready)
		if c == nil || c.Status != ready || c.Reason != reason {
			return fmt.Errorf("Ready %+v, want %s %s", c, ready, reason)
		}
		return nil
	})
	return u
}

// checkChildren says what differs between the User's children and its spec.
func checkChildren(ctx context.Context, u *identityv1alpha1.User) error {
	nsName := usernamespace.NamespaceName(u.Name)
	ns, rb, cr, crb, rq := &corev1.Namespace{}, &rbacv1.RoleBinding{}, &rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{}, &corev1.ResourceQuota{}
	for _, o := range []struct {
		key types.NamespacedName
		obj client.Object
	}{
		{types.NamespacedName{Name: nsName}, ns},
		{types.NamespacedName{Namespace: nsName, Name: usernamespace.RoleBindingName}, rb},
		{types.NamespacedName{Name: nsName}, cr},
		{types.NamespacedName{Name: nsName}, crb},
	} {
		if err := env.Client.Get(ctx, o.key, o.obj); err != nil {
			return err
		}
		if !metav1.IsControlledBy(o.obj, u) {
			return fmt.Errorf("%s is not controlled by User %s", o.key, u.Name)
		}
	}
	want := []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: u.Name}}
	for _, g := range u.Spec.Groups {
		want = append(want, rbacv1.Subject{Kind: "Group", APIGroup: rbacv1.GroupName, Name: g})
	}
	if !slices.Equal(rb.Subjects, want) {
		return fmt.Errorf("RoleBinding subjects %v, want %v", rb.Subjects, want)
	}
	if rb.RoleRef.Name != u.Spec.ClusterRole {
		return fmt.Errorf("RoleBinding binds %s, want %s", rb.RoleRef.Name, u.Spec.ClusterRole)
	}
	err := env.Client.Get(ctx, types.NamespacedName{Namespace: nsName, Name: usernamespace.ResourceQuotaName}, rq)
	switch {
	case len(u.Spec.ResourceQuota) == 0 && !apierrors.IsNotFound(err):
		return fmt.Errorf("ResourceQuota without a quota in the spec: %v", err)
	case len(u.Spec.ResourceQuota) > 0 && err != nil:
		return err
	case len(u.Spec.ResourceQuota) > 0 && len(rq.Spec.Hard) != len(u.Spec.ResourceQuota):
		return fmt.Errorf("ResourceQuota hard %v, want %v", rq.Spec.Hard, u.Spec.ResourceQuota)
	}
	return nil
}

func TestUserLifecycle(t *testing.T) {
	r, counter := start(t)
	ctx := context.Background()
	name := userName(t)
	u := &identityv1alpha1.User{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: identityv1alpha1.UserSpec{
			Groups:        []string{"developers", "oncall"},
			ResourceQuota: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("5")},
		},
	}
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	if u.Spec.ClusterRole != "edit" {
		t.Fatalf("clusterRole defaulted to %q, want edit", u.Spec.ClusterRole)
	}

	// 1. convergence: a namespace, RBAC and a quota, all controlled by the
	// cluster-scoped User.
	u = waitReady(t, name, metav1.ConditionTrue, conditions.ReasonSucceeded)
	eventually(t, "children", func(ctx context.Context) error { return checkChildren(ctx, u) })
	if u.Status.Namespace != usernamespace.NamespaceName(name) {
		t.Fatalf("status.namespace %q", u.Status.Namespace)
	}

	// 2. no writes for a converged User.
	assertNoWrites(t, r, counter, name)

	// 4. another writer's condition and finalizer.
	updateUser(t, name, true, func(u *identityv1alpha1.User) {
		u.Status.Conditions = append(u.Status.Conditions, metav1.Condition{
			Type: foreignCondition, Status: metav1.ConditionTrue, Reason: "Audited", LastTransitionTime: metav1.Now(),
		})
	})
	updateUser(t, name, false, func(u *identityv1alpha1.User) { u.Finalizers = append(u.Finalizers, foreignFinalizer) })

	// 3. removals: a group dropped, the quota emptied, another role (roleRef
	// is immutable: the RoleBinding is replaced).
	updateUser(t, name, false, func(u *identityv1alpha1.User) {
		u.Spec.Groups = u.Spec.Groups[:1]
		u.Spec.ResourceQuota = nil
		u.Spec.ClusterRole = "view"
	})
	u = waitReady(t, name, metav1.ConditionTrue, conditions.ReasonSucceeded)
	eventually(t, "children follow the spec", func(ctx context.Context) error {
		var err error
		if u, err = getUser(ctx, name); err != nil {
			return err
		}
		return checkChildren(ctx, u)
	})
	if conditions.Get(u, foreignCondition) == nil || !slices.Contains(u.Finalizers, foreignFinalizer) {
		t.Fatalf("another writer's condition or finalizer was lost: %v %v", u.Status.Conditions, u.Finalizers)
	}
	u = waitReady(t, name, metav1.ConditionTrue, conditions.ReasonSucceeded)
	assertNoWrites(t, r, counter, name)

	// 5. deletion: the garbage collector deletes the namespace, the
	// ClusterRole and its binding; the namespace controller empties the
	// namespace. The foreign finalizer is released by this test.
	if err := env.Client.Delete(ctx, u); err != nil {
		t.Fatal(err)
	}
	updateUser(t, name, false, func(u *identityv1alpha1.User) {
		u.Finalizers = slices.DeleteFunc(u.Finalizers, func(f string) bool { return f == foreignFinalizer })
	})
	nsName := usernamespace.NamespaceName(name)
	eventually(t, "everything collected", func(ctx context.Context) error {
		for _, o := range []struct {
			key types.NamespacedName
			obj client.Object
		}{
			{types.NamespacedName{Name: name}, &identityv1alpha1.User{}},
			{types.NamespacedName{Name: nsName}, &corev1.Namespace{}},
			{types.NamespacedName{Name: nsName}, &rbacv1.ClusterRole{}},
			{types.NamespacedName{Name: nsName}, &rbacv1.ClusterRoleBinding{}},
			{types.NamespacedName{Namespace: nsName, Name: usernamespace.RoleBindingName}, &rbacv1.RoleBinding{}},
		} {
			if err := env.Client.Get(ctx, o.key, o.obj); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%T %s still there (%v)", o.obj, o.key, err)
			}
		}
		return nil
	})
}

func assertNoWrites(t *testing.T, r *usernamespace.Reconciler, counter *testenv.RequestCounter, name string) {
	t.Helper()
	// The manager's own controller may still be taking in its last write:
	// the counter counts its requests too. Wait until its cache holds the
	// User as it is live and it is idle.
	live, err := getUser(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cache to hold the User as it is live", func(ctx context.Context) error {
		cached := &identityv1alpha1.User{}
		if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, cached); err != nil {
			return err
		}
		if cached.ResourceVersion != live.ResourceVersion {
			return fmt.Errorf("cache at %s, live at %s", cached.ResourceVersion, live.ResourceVersion)
		}
		return nil
	})
	testenv.WaitIdle(t, r.Name)
	counter.Reset()
	for range 3 {
		res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: name}})
		if err != nil || res.RequeueAfter != 0 {
			t.Fatalf("Reconcile of a converged User: %+v, %v", res, err)
		}
	}
	if w := counter.Writes(); w != 0 {
		t.Fatalf("3 reconciles of a converged User wrote %d times: %s", w, counter)
	}
	t.Logf("3 reconciles of a converged User: %s (0 writes)", counter)
}

// TestNamespaceTakenIsNotAdopted: a namespace of that name that the User
// does not control is left alone (deleting the User would delete it), and
// the User says why it is not ready, without an error loop.
func TestNamespaceTakenIsNotAdopted(t *testing.T) {
	r, counter := start(t)
	ctx := context.Background()
	name := userName(t)
	taken := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: usernamespace.NamespaceName(name)}}
	if err := env.Client.Create(ctx, taken); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), taken) })
	u := &identityv1alpha1.User{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), u) })

	waitReady(t, name, metav1.ConditionFalse, identityv1alpha1.ReasonNamespaceTaken)
	assertNoWrites(t, r, counter, name)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(taken), taken); err != nil {
		t.Fatal(err)
	}
	if len(taken.OwnerReferences) != 0 {
		t.Fatalf("the namespace was adopted: %v", taken.OwnerReferences)
	}
	err := env.Client.Get(ctx, types.NamespacedName{Namespace: taken.Name, Name: usernamespace.RoleBindingName}, &rbacv1.RoleBinding{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("a RoleBinding in a namespace that is not the user's: %v", err)
	}
}

// TestNamespaceDeletedIsRecreated: someone deletes the user's namespace;
// once the namespace controller removed it, the User gets a new one.
func TestNamespaceDeletedIsRecreated(t *testing.T) {
	start(t)
	ctx := context.Background()
	name := userName(t)
	u := &identityv1alpha1.User{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), u) })
	u = waitReady(t, name, metav1.ConditionTrue, conditions.ReasonSucceeded)
	ns := &corev1.Namespace{}
	if err := env.Client.Get(ctx, types.NamespacedName{Name: usernamespace.NamespaceName(name)}, ns); err != nil {
		t.Fatal(err)
	}
	old := ns.UID
	if err := env.Client.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a new namespace", func(ctx context.Context) error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ns), ns); err != nil {
			return err
		}
		if ns.UID == old {
			return fmt.Errorf("still the old namespace (%s)", ns.Status.Phase)
		}
		return nil
	})
	u = waitReady(t, name, metav1.ConditionTrue, conditions.ReasonSucceeded)
	eventually(t, "children", func(ctx context.Context) error { return checkChildren(ctx, u) })
}

// TestUserNameMustMakeANamespace: the CRD refuses User names that would not
// make a valid namespace name, instead of a controller failing on them.
func TestUserNameMustMakeANamespace(t *testing.T) {
	env.Require(t)
	for _, tc := range []struct {
		name  string
		valid bool
	}{
		{"alice", true},
		{"alice.smith", false},
		{strings.Repeat("a", 58), true},
		{strings.Repeat("a", 59), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &identityv1alpha1.User{ObjectMeta: metav1.ObjectMeta{Name: tc.name}}
			err := env.Client.Create(context.Background(), u, client.DryRunAll)
			if tc.valid && err != nil {
				t.Fatalf("valid name refused: %v", err)
			}
			if !tc.valid && !apierrors.IsInvalid(err) {
				t.Fatalf("invalid name: got %v, want Invalid", err)
			}
		})
	}
}

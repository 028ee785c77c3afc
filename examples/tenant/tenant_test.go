package tenant_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/testenv"

	"github.com/steadyk8s/steady/examples/tenant"
	tenancyv1alpha1 "github.com/steadyk8s/steady/examples/tenant/api/v1alpha1"
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
	if err := tenant.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

const (
	timeout          = 60 * time.Second
	foreignFinalizer = "example.com/keep"
	foreignCondition = "example.com/Audited"
)

var managers atomic.Int32

// operator is one running tenant operator, as main runs it.
type operator struct {
	mgr     ctrl.Manager
	tenants *tenant.Reconciler
	secrets *tenant.RegistrySecretReconciler
	counter *testenv.RequestCounter
}

// start runs the three pieces of the operator in a manager; source is the
// registry Secret it copies.
func start(t *testing.T, source types.NamespacedName) *operator {
	t.Helper()
	n := managers.Add(1)
	op := &operator{counter: &testenv.RequestCounter{}}
	op.mgr = env.StartManager(t,
		testenv.WithTransport(op.counter.Wrap),
		testenv.WithManagerOptions{
			Controller: config.Controller{SkipNameValidation: ptr.To(true)},
			Cache:      cache.Options{ByObject: tenant.SecretCacheByObject(source.Name)},
		},
		testenv.WithSetup(func(mgr ctrl.Manager) error {
			roles := &tenant.ClusterRoles{Client: mgr.GetClient()}
			if err := mgr.Add(roles); err != nil {
				return err
			}
			op.tenants = &tenant.Reconciler{
				Client:            mgr.GetClient(),
				ClusterRolesReady: roles.Ready(), Name: fmt.Sprintf("tenant-%d", n),
			}
			if err := op.tenants.SetupWithManager(mgr); err != nil {
				return err
			}
			op.secrets = &tenant.RegistrySecretReconciler{
				Client: mgr.GetClient(), Source: source, Name: fmt.Sprintf("registry-%d", n),
			}
			return op.secrets.SetupWithManager(mgr)
		}))
	return op
}

// name makes a cluster-unique name from the test's name.
func name(t *testing.T, suffix string) string {
	n := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(n) > 40 {
		n = n[:40]
	}
	tok, _ := tokens.LoadOrStore(t, fmt.Sprint(tokenSeq.Add(1)))
	return strings.Trim(n, "-") + "-" + tok.(string) + "-" + suffix
}

// tokens makes names unique per test run (go test -count=N).
var (
	tokens   sync.Map
	tokenSeq atomic.Int32
)

// namespace creates a namespace labelled for tenant (no label when tenant
// is empty) and deletes it when the test ends.
func namespace(t *testing.T, ns, tenantName string) string {
	t.Helper()
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if tenantName != "" {
		obj.Labels = map[string]string{tenancyv1alpha1.TenantLabel: tenantName}
	}
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	return ns
}

func newTenant(name string, quota *int32) *tenancyv1alpha1.Tenant {
	return &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.TenantSpec{
			Owner:          tenancyv1alpha1.TenantOwner{Kind: "User", Name: "alice"},
			NamespaceQuota: quota,
			ResourceQuota: corev1.ResourceList{
				corev1.ResourcePods:           resource.MustParse("10"),
				corev1.ResourceRequestsMemory: resource.MustParse("1Gi"),
			},
			LimitRanges: []corev1.LimitRangeItem{{
				Type:    corev1.LimitTypeContainer,
				Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
			}},
			AllowIngressFrom: []networkingv1.NetworkPolicyPeer{
				{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}},
				{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "ingress"}}},
			},
		},
	}
}

func createTenant(t *testing.T, tn *tenancyv1alpha1.Tenant) {
	t.Helper()
	if err := env.Client.Create(context.Background(), tn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		live := &tenancyv1alpha1.Tenant{}
		if env.Client.Get(ctx, client.ObjectKeyFromObject(tn), live) == nil && slices.Contains(live.Finalizers, foreignFinalizer) {
			live.Finalizers = slices.DeleteFunc(live.Finalizers, func(f string) bool { return f == foreignFinalizer })
			_ = env.Client.Update(ctx, live)
		}
		_ = env.Client.Delete(ctx, tn)
	})
}

// eventually polls check, reading through env.Client, until it returns nil.
func eventually(t *testing.T, what string, check func(ctx context.Context) error) {
	t.Helper()
	testenv.Eventually(t, what, func() error { return check(context.Background()) }, timeout)
}

func getTenant(ctx context.Context, name string) (*tenancyv1alpha1.Tenant, error) {
	tn := &tenancyv1alpha1.Tenant{}
	return tn, env.Client.Get(ctx, types.NamespacedName{Name: name}, tn)
}

// updateTenant changes the live Tenant, retrying on conflicts with the
// controller's status writes.
func updateTenant(t *testing.T, name string, status bool, change func(*tenancyv1alpha1.Tenant)) {
	t.Helper()
	ctx := context.Background()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		tn, err := getTenant(ctx, name)
		if err != nil {
			return err
		}
		change(tn)
		if status {
			return env.Client.Status().Update(ctx, tn)
		}
		return env.Client.Update(ctx, tn)
	}); err != nil {
		t.Fatal(err)
	}
}

// waitTenant waits until the Tenant lists exactly namespaces and its
// conditions for this generation say ready (or not).
func waitTenant(t *testing.T, name string, ready bool, namespaces ...string) *tenancyv1alpha1.Tenant {
	t.Helper()
	slices.Sort(namespaces)
	var tn *tenancyv1alpha1.Tenant
	eventually(t, "Tenant "+name+" converges", func(ctx context.Context) error {
		var err error
		if tn, err = getTenant(ctx, name); err != nil {
			return err
		}
		if tn.Status.ObservedGeneration != tn.Generation {
			return fmt.Errorf("observedGeneration %d, generation %d", tn.Status.ObservedGeneration, tn.Generation)
		}
		if !slices.Equal(tn.Status.Namespaces, namespaces) {
			return fmt.Errorf("status.namespaces %v, want %v", tn.Status.Namespaces, namespaces)
		}
		if got := conditions.IsTrue(tn, conditions.Ready); got != ready {
			return fmt.Errorf("Ready %v, want %v: %+v", got, ready, conditions.Get(tn, conditions.Ready))
		}
		return nil
	})
	return tn
}

// children reads the tenant's four objects in ns; missing ones are nil.
type children struct {
	rq *corev1.ResourceQuota
	lr *corev1.LimitRange
	np *networkingv1.NetworkPolicy
	rb *rbacv1.RoleBinding
}

func readChildren(ctx context.Context, ns string) (children, error) {
	c := children{&corev1.ResourceQuota{}, &corev1.LimitRange{}, &networkingv1.NetworkPolicy{}, &rbacv1.RoleBinding{}}
	objs := []struct {
		name string
		obj  client.Object
		set  func()
	}{
		{tenant.ResourceQuotaName, c.rq, func() { c.rq = nil }},
		{tenant.LimitRangeName, c.lr, func() { c.lr = nil }},
		{tenant.NetworkPolicyName, c.np, func() { c.np = nil }},
		{tenant.OwnerRoleBindingName, c.rb, func() { c.rb = nil }},
	}
	for _, o := range objs {
		err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: o.name}, o.obj)
		switch {
		case apierrors.IsNotFound(err):
			o.set()
		case err != nil:
			return c, err
		}
	}
	return c, nil
}

// checkChildren says what differs between the children in ns and tn's spec.
func checkChildren(ctx context.Context, tn *tenancyv1alpha1.Tenant, ns string) error {
	c, err := readChildren(ctx, ns)
	if err != nil {
		return err
	}
	if c.rq == nil || c.lr == nil || c.np == nil || c.rb == nil {
		return fmt.Errorf("namespace %s: children missing: %+v", ns, c)
	}
	for _, obj := range []client.Object{c.rq, c.lr, c.np, c.rb} {
		ref := metav1.GetControllerOf(obj)
		if ref == nil || ref.UID != tn.UID {
			return fmt.Errorf("%s/%s is not controlled by Tenant %s: %v", ns, obj.GetName(), tn.Name, ref)
		}
		// The owner record (RecordOwner): a restored child goes back to
		// its tenant.
		if l := obj.GetLabels(); l[ownership.OwnerKindLabel] != "Tenant."+tenancyv1alpha1.GroupVersion.Group || l[ownership.OwnerNameLabel] != tn.Name {
			return fmt.Errorf("%s/%s records no Tenant %s: labels %v", ns, obj.GetName(), tn.Name, l)
		}
	}
	if len(c.rq.Spec.Hard) != len(tn.Spec.ResourceQuota) {
		return fmt.Errorf("ResourceQuota hard %v, want %v", c.rq.Spec.Hard, tn.Spec.ResourceQuota)
	}
	for k, v := range tn.Spec.ResourceQuota {
		if got := c.rq.Spec.Hard[k]; got.Cmp(v) != 0 {
			return fmt.Errorf("ResourceQuota %s = %v, want %v", k, got, v)
		}
	}
	if got, want := len(c.np.Spec.Ingress[0].From), 1+len(tn.Spec.AllowIngressFrom); got != want {
		return fmt.Errorf("NetworkPolicy has %d peers, want %d", got, want)
	}
	if want := []rbacv1.Subject{{Kind: tn.Spec.Owner.Kind, Name: tn.Spec.Owner.Name, APIGroup: rbacv1.GroupName}}; !slices.Equal(c.rb.Subjects, want) {
		return fmt.Errorf("RoleBinding subjects %v, want %v", c.rb.Subjects, want)
	}
	return nil
}

// noChildren says what the tenant still has in ns.
func noChildren(ctx context.Context, ns string) error {
	c, err := readChildren(ctx, ns)
	if err != nil {
		return err
	}
	if c.rq != nil || c.lr != nil || c.np != nil || c.rb != nil {
		return fmt.Errorf("namespace %s still has tenant objects", ns)
	}
	return nil
}

// assertNoWrites reconciles tn three times through the manager's cached
// client and fails on any write, and on any dry run after the first
// reconcile (ownership remembers that a converged child differs only by
// the API server's defaults; the first reconcile may meet a child the
// controller's last write changed).
func assertNoWrites(t *testing.T, op *operator, name string) {
	t.Helper()
	op.counter.Reset()
	dryRuns := func() int { return op.counter.Get("DRYRUN-PUT") + op.counter.Get("DRYRUN-PATCH") }
	first := 0
	for i := range 3 {
		res, err := op.tenants.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: name}})
		if err != nil || res.RequeueAfter != 0 {
			t.Fatalf("Reconcile of a converged Tenant: %+v, %v", res, err)
		}
		if i == 0 {
			first = dryRuns()
		}
	}
	if w := op.counter.Writes(); w != 0 {
		t.Fatalf("3 reconciles of a converged Tenant wrote %d times: %s", w, op.counter)
	}
	if d := dryRuns() - first; d != 0 {
		t.Fatalf("reconciles 2 and 3 of a converged Tenant made %d dry runs: %s", d, op.counter)
	}
	t.Logf("3 reconciles of a converged Tenant: %s (0 writes)", op.counter)
}

func TestTenantLifecycle(t *testing.T) {
	src := types.NamespacedName{Namespace: env.Namespace(t), Name: "unused-registry"}
	op := start(t, src)
	ctx := context.Background()

	tn := newTenant(name(t, "t"), ptr.To[int32](3))
	createTenant(t, tn)
	a := namespace(t, name(t, "a"), tn.Name)
	b := namespace(t, name(t, "b"), tn.Name)
	other := namespace(t, name(t, "other"), "")

	// 1. convergence.
	tn = waitTenant(t, tn.Name, true, a, b)
	for _, ns := range []string{a, b} {
		eventually(t, "children in "+ns, func(ctx context.Context) error { return checkChildren(ctx, tn, ns) })
	}
	if err := noChildren(ctx, other); err != nil {
		t.Fatal(err)
	}
	if c := conditions.Get(tn, tenancyv1alpha1.NamespaceQuotaCondition); c == nil || c.Reason != tenancyv1alpha1.ReasonWithinQuota {
		t.Fatalf("NamespaceQuota: %+v", c)
	}

	// The index maps each namespace back to its tenant.
	for _, ns := range []string{a, b} {
		found, err := tenant.TenantsByNamespace.Find(ctx, op.mgr.GetClient(), op.mgr.GetScheme(), ns)
		if err != nil || len(found) != 1 || found[0].Name != tn.Name {
			t.Fatalf("TenantsByNamespace.Find(%s) = %v, %v", ns, found, err)
		}
	}

	// 2. no writes for a converged Tenant.
	assertNoWrites(t, op, tn.Name)

	// 4. another writer's condition and finalizer, added meanwhile.
	updateTenant(t, tn.Name, true, func(tn *tenancyv1alpha1.Tenant) {
		tn.Status.Conditions = append(tn.Status.Conditions, metav1.Condition{
			Type: foreignCondition, Status: metav1.ConditionTrue, Reason: "Audited", LastTransitionTime: metav1.Now(),
		})
	})
	updateTenant(t, tn.Name, false, func(tn *tenancyv1alpha1.Tenant) {
		tn.Finalizers = append(tn.Finalizers, foreignFinalizer)
	})

	// 3. removals: another owner (alice's subject gone), an ingress peer
	// dropped, a quota entry dropped, a namespace leaving the tenant.
	updateTenant(t, tn.Name, false, func(tn *tenancyv1alpha1.Tenant) {
		tn.Spec.Owner = tenancyv1alpha1.TenantOwner{Kind: "Group", Name: "oil-admins"}
		tn.Spec.AllowIngressFrom = tn.Spec.AllowIngressFrom[:1]
		delete(tn.Spec.ResourceQuota, corev1.ResourceRequestsMemory)
	})
	nsB := &corev1.Namespace{}
	if err := env.Client.Get(ctx, types.NamespacedName{Name: b}, nsB); err != nil {
		t.Fatal(err)
	}
	delete(nsB.Labels, tenancyv1alpha1.TenantLabel)
	if err := env.Client.Update(ctx, nsB); err != nil {
		t.Fatal(err)
	}
	tn = waitTenant(t, tn.Name, true, a)
	eventually(t, "children in "+a+" follow the spec", func(ctx context.Context) error { return checkChildren(ctx, tn, a) })
	eventually(t, "children in "+b+" pruned", func(ctx context.Context) error { return noChildren(ctx, b) })
	c, _ := readChildren(ctx, a)
	if len(c.rb.Subjects) != 1 || c.rb.Subjects[0].Name != "oil-admins" {
		t.Fatalf("RoleBinding subjects %v: alice must be gone", c.rb.Subjects)
	}
	if _, ok := c.rq.Spec.Hard[corev1.ResourceRequestsMemory]; ok {
		t.Fatalf("ResourceQuota still has requests.memory: %v", c.rq.Spec.Hard)
	}
	// 4. they survived.
	if conditions.Get(tn, foreignCondition) == nil || !slices.Contains(tn.Finalizers, foreignFinalizer) {
		t.Fatalf("another writer's condition or finalizer was lost: %v %v", tn.Status.Conditions, tn.Finalizers)
	}
	assertNoWrites(t, op, tn.Name)

	// 5. deletion: the garbage collector removes every child; the foreign
	// finalizer is released by its owner, this test.
	if err := env.Client.Delete(ctx, tn); err != nil {
		t.Fatal(err)
	}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		tn, _ = getTenant(ctx, tn.Name)
		tn.Finalizers = slices.DeleteFunc(tn.Finalizers, func(f string) bool { return f == foreignFinalizer })
		return env.Client.Update(ctx, tn)
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Tenant gone", func(ctx context.Context) error {
		if _, err := getTenant(ctx, tn.Name); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
	eventually(t, "children collected", func(ctx context.Context) error { return noChildren(ctx, a) })
}

func TestOverQuota(t *testing.T) {
	src := types.NamespacedName{Namespace: env.Namespace(t), Name: "unused-registry"}
	op := start(t, src)
	ctx := context.Background()

	tn := newTenant(name(t, "t"), ptr.To[int32](1))
	createTenant(t, tn)
	// Admitted oldest first, then by name: a before b.
	a := namespace(t, name(t, "a"), tn.Name)
	b := namespace(t, name(t, "b"), tn.Name)

	tn = waitTenant(t, tn.Name, false, a)
	q := conditions.Get(tn, tenancyv1alpha1.NamespaceQuotaCondition)
	if q == nil || q.Status != metav1.ConditionFalse || q.Reason != tenancyv1alpha1.ReasonOverQuota || !strings.Contains(q.Message, b) {
		t.Fatalf("NamespaceQuota: %+v", q)
	}
	if r := conditions.Get(tn, conditions.Ready); r.Reason != tenancyv1alpha1.ReasonOverQuota {
		t.Fatalf("Ready: %+v", r)
	}
	eventually(t, "children in "+a, func(ctx context.Context) error { return checkChildren(ctx, tn, a) })
	if err := noChildren(ctx, b); err != nil {
		t.Fatal(err)
	}
	// Over quota is a state, not an error: no error, no requeue, no write.
	assertNoWrites(t, op, tn.Name)

	// Quota raised: b gets its objects.
	updateTenant(t, tn.Name, false, func(tn *tenancyv1alpha1.Tenant) { tn.Spec.NamespaceQuota = ptr.To[int32](2) })
	tn = waitTenant(t, tn.Name, true, a, b)
	eventually(t, "children in "+b, func(ctx context.Context) error { return checkChildren(ctx, tn, b) })

	// Quota lowered again: the newest namespace loses them.
	updateTenant(t, tn.Name, false, func(tn *tenancyv1alpha1.Tenant) { tn.Spec.NamespaceQuota = ptr.To[int32](1) })
	tn = waitTenant(t, tn.Name, false, a)
	eventually(t, "children in "+b+" pruned", func(ctx context.Context) error { return noChildren(ctx, b) })
	if err := checkChildren(ctx, tn, a); err != nil {
		t.Fatal(err)
	}
}

// TestNamespaceMovesBetweenTenants relabels a namespace: the old tenant,
// found through the status.namespaces index, lets it go, and the new one
// takes it.
func TestNamespaceMovesBetweenTenants(t *testing.T) {
	src := types.NamespacedName{Namespace: env.Namespace(t), Name: "unused-registry"}
	start(t, src)
	ctx := context.Background()

	one, two := newTenant(name(t, "one"), nil), newTenant(name(t, "two"), nil)
	two.Spec.Owner.Name = "bob"
	createTenant(t, one)
	createTenant(t, two)
	ns := namespace(t, name(t, "ns"), one.Name)
	one = waitTenant(t, one.Name, true, ns)
	eventually(t, "children of one", func(ctx context.Context) error { return checkChildren(ctx, one, ns) })

	obj := &corev1.Namespace{}
	if err := env.Client.Get(ctx, types.NamespacedName{Name: ns}, obj); err != nil {
		t.Fatal(err)
	}
	obj.Labels[tenancyv1alpha1.TenantLabel] = two.Name
	if err := env.Client.Update(ctx, obj); err != nil {
		t.Fatal(err)
	}
	waitTenant(t, one.Name, true)
	two = waitTenant(t, two.Name, true, ns)
	eventually(t, "children of two", func(ctx context.Context) error { return checkChildren(ctx, two, ns) })
}

func TestRegistrySecretIsCopied(t *testing.T) {
	src := types.NamespacedName{Namespace: env.Namespace(t), Name: tenant.DefaultRegistrySecret}
	op := start(t, src)
	ctx := context.Background()

	source := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: src.Namespace, Name: src.Name},
		Data:       map[string][]byte{"token": []byte("v1")},
	}
	if err := env.Client.Create(ctx, source); err != nil {
		t.Fatal(err)
	}
	// Another Secret in the same namespace is not copied (nor cached).
	if err := env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: src.Namespace, Name: "other"}}); err != nil {
		t.Fatal(err)
	}
	tn := newTenant(name(t, "t"), nil)
	createTenant(t, tn)
	a := namespace(t, name(t, "a"), tn.Name)
	b := namespace(t, name(t, "b"), tn.Name)
	tn = waitTenant(t, tn.Name, true, a, b)

	copies := func(want string, namespaces ...string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			for _, ns := range namespaces {
				s := &corev1.Secret{}
				if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: src.Name}, s); err != nil {
					return err
				}
				if string(s.Data["token"]) != want {
					return fmt.Errorf("%s/%s token %q, want %q", ns, s.Name, s.Data["token"], want)
				}
				if ref := metav1.GetControllerOf(s); ref == nil || ref.UID != tn.UID {
					return fmt.Errorf("%s/%s not controlled by the Tenant: %v", ns, s.Name, ref)
				}
			}
			return nil
		}
	}
	gone := func(namespaces ...string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			for _, ns := range namespaces {
				err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: src.Name}, &corev1.Secret{})
				if !apierrors.IsNotFound(err) {
					return fmt.Errorf("%s/%s: %v", ns, src.Name, err)
				}
			}
			return nil
		}
	}
	eventually(t, "copies made", copies("v1", a, b))
	for _, ns := range []string{a, b} {
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "other"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			t.Fatalf("Secret other was copied into %s: %v", ns, err)
		}
	}

	// Converged: no writes.
	op.counter.Reset()
	for range 3 {
		if _, err := op.secrets.Reconcile(ctx, ctrl.Request{NamespacedName: src}); err != nil {
			t.Fatal(err)
		}
	}
	if w := op.counter.Writes(); w != 0 {
		t.Fatalf("converged registry Secret: %d writes: %s", w, op.counter)
	}
	t.Logf("3 reconciles of converged registry Secret copies: %s (0 writes)", op.counter)

	// The source changes: the copies follow; a key removed is removed.
	source.Data = map[string][]byte{"token": []byte("v2")}
	if err := env.Client.Update(ctx, source); err != nil {
		t.Fatal(err)
	}
	eventually(t, "copies updated", copies("v2", a, b))

	// A copy deleted by someone comes back.
	if err := env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: src.Name}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "copy recreated", copies("v2", a, b))

	// A namespace leaving the tenant loses its copy.
	nsB := &corev1.Namespace{}
	if err := env.Client.Get(ctx, types.NamespacedName{Name: b}, nsB); err != nil {
		t.Fatal(err)
	}
	delete(nsB.Labels, tenancyv1alpha1.TenantLabel)
	if err := env.Client.Update(ctx, nsB); err != nil {
		t.Fatal(err)
	}
	eventually(t, "copy in "+b+" deleted", gone(b))
	eventually(t, "copy in "+a+" kept", copies("v2", a))

	// The source gone: every copy goes.
	if err := env.Client.Delete(ctx, source); err != nil {
		t.Fatal(err)
	}
	eventually(t, "copies deleted", gone(a, b))
}

func TestClusterRolesEnsuredAtStart(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	// Drift before the manager starts: a rule changed, a role deleted.
	if err := tenant.EnsureClusterRoles(ctx, env.Client); err != nil {
		t.Fatal(err)
	}
	owner := &rbacv1.ClusterRole{}
	if err := env.Client.Get(ctx, types.NamespacedName{Name: tenant.OwnerClusterRole}, owner); err != nil {
		t.Fatal(err)
	}
	want := owner.Rules
	owner.Rules = owner.Rules[:1]
	if err := env.Client.Update(ctx, owner); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: tenant.ViewerClusterRole}}); err != nil {
		t.Fatal(err)
	}

	// A manager with the Runnable, whose API server fails the first applies.
	var fails atomic.Int32
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	flaky := interceptor.NewClient(wc, interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if fails.Add(1) <= 2 {
				return apierrors.NewInternalError(errors.New("injected"))
			}
			return c.Apply(ctx, obj, opts...)
		},
	})
	roles := &tenant.ClusterRoles{Client: flaky, Backoff: wait.Backoff{Duration: 10 * time.Millisecond, Factor: 1, Steps: 100}}
	env.StartManager(t, testenv.WithSetup(func(mgr ctrl.Manager) error { return mgr.Add(roles) }))
	select {
	case <-roles.Ready():
	case <-time.After(timeout):
		t.Fatal("the ClusterRoles were not ensured")
	}
	if n := fails.Load(); n < 3 {
		t.Fatalf("%d applies; the 2 failures should have been retried", n)
	}
	if err := env.Client.Get(ctx, types.NamespacedName{Name: tenant.OwnerClusterRole}, owner); err != nil {
		t.Fatal(err)
	}
	if len(owner.Rules) != len(want) {
		t.Fatalf("tenant-owner has %d rules, want %d", len(owner.Rules), len(want))
	}
	if err := env.Client.Get(ctx, types.NamespacedName{Name: tenant.ViewerClusterRole}, &rbacv1.ClusterRole{}); err != nil {
		t.Fatalf("tenant-viewer not recreated: %v", err)
	}
}

// TestTenantWaitsForClusterRoles: until the Runnable is done, the Tenant
// controller writes nothing and asks to come back.
func TestTenantWaitsForClusterRoles(t *testing.T) {
	env.Require(t)
	never := make(chan struct{})
	var r *tenant.Reconciler
	var counter testenv.RequestCounter
	env.StartManager(t,
		testenv.WithTransport(counter.Wrap),
		testenv.WithManagerOptions{Controller: config.Controller{SkipNameValidation: ptr.To(true)}},
		testenv.WithSetup(func(mgr ctrl.Manager) error {
			r = &tenant.Reconciler{Client: mgr.GetClient(), ClusterRolesReady: never,
				Name: fmt.Sprintf("tenant-%d", managers.Add(1))}
			return r.SetupWithManager(mgr)
		}))
	tn := newTenant(name(t, "t"), nil)
	createTenant(t, tn)
	ns := namespace(t, name(t, "ns"), tn.Name)
	ctx := context.Background()
	eventually(t, "the cache has the Tenant", func(ctx context.Context) error {
		counter.Reset()
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: tn.Name}})
		if err != nil {
			return err
		}
		if res.RequeueAfter == 0 {
			return errors.New("no requeue while the ClusterRoles are not ensured")
		}
		return nil
	})
	// The Tenant's own status may be written (NamespacesConfigured Unknown);
	// nothing is created.
	if n := counter.Get("POST") + counter.Get("PUT"); n != 0 {
		t.Fatalf("%d creates or updates before the ClusterRoles were ensured: %s", n, &counter)
	}
	tn, _ = getTenant(ctx, tn.Name)
	if c := conditions.Get(tn, tenancyv1alpha1.NamespacesConfiguredCondition); c == nil || c.Reason != tenancyv1alpha1.ReasonWaitingForClusterRoles {
		t.Fatalf("NamespacesConfigured: %+v", c)
	}
	if err := noChildren(ctx, ns); err != nil {
		t.Fatal(err)
	}
}

// TestMembershipProperty changes the labelled namespaces and the quota at
// random, round after round, and checks each time that the tenant converges
// exactly: the oldest labelled namespaces within the quota are admitted and
// configured, every other namespace has none of the tenant's objects, and
// Ready is False exactly when the quota is exceeded.
func TestMembershipProperty(t *testing.T) {
	src := types.NamespacedName{Namespace: env.Namespace(t), Name: "unused-registry"}
	start(t, src)
	ctx := context.Background()
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)

	tn := newTenant(name(t, "t"), nil)
	createTenant(t, tn)
	// Created in name order, so oldest first is name order.
	var all []string
	for _, s := range []string{"a", "b", "c", "d"} {
		all = append(all, namespace(t, name(t, s), ""))
	}
	for round := range 6 {
		var quota *int32
		if rng.Intn(4) > 0 {
			quota = ptr.To(int32(rng.Intn(4)))
		}
		var labelled []string
		for _, ns := range all {
			obj := &corev1.Namespace{}
			if err := env.Client.Get(ctx, types.NamespacedName{Name: ns}, obj); err != nil {
				t.Fatal(err)
			}
			if obj.Labels == nil {
				obj.Labels = map[string]string{}
			}
			if rng.Intn(2) == 0 {
				labelled = append(labelled, ns)
				obj.Labels[tenancyv1alpha1.TenantLabel] = tn.Name
			} else {
				delete(obj.Labels, tenancyv1alpha1.TenantLabel)
			}
			if err := env.Client.Update(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}
		updateTenant(t, tn.Name, false, func(tn *tenancyv1alpha1.Tenant) { tn.Spec.NamespaceQuota = quota })
		admitted := labelled
		if quota != nil && len(labelled) > int(*quota) {
			admitted = labelled[:*quota]
		}
		t.Logf("round %d: quota %v, labelled %v", round, ptr.Deref(quota, -1), labelled)
		got := waitTenant(t, tn.Name, len(admitted) == len(labelled), admitted...)
		for _, ns := range all {
			if slices.Contains(admitted, ns) {
				eventually(t, "children in "+ns, func(ctx context.Context) error { return checkChildren(ctx, got, ns) })
			} else {
				eventually(t, "no children in "+ns, func(ctx context.Context) error { return noChildren(ctx, ns) })
			}
		}
	}
}

// noWatch lets interceptor wrap a manager's client, which has no Watch.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("no watch")
}

// TestChildWriteFailureIsReported: the API server fails the writes of the
// owner RoleBinding; the Tenant says so (NamespacesConfigured False,
// ApplyFailed, Ready False) while it lasts, the error is retried, and once
// the API server recovers the Tenant converges.
func TestChildWriteFailureIsReported(t *testing.T) {
	env.Require(t)
	var failing atomic.Bool
	failing.Store(true)
	env.StartManager(t,
		testenv.WithManagerOptions{Controller: config.Controller{SkipNameValidation: ptr.To(true)}},
		testenv.WithSetup(func(mgr ctrl.Manager) error {
			flaky := interceptor.NewClient(noWatch{mgr.GetClient()}, interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if _, ok := obj.(*rbacv1.RoleBinding); ok && failing.Load() {
						return apierrors.NewInternalError(errors.New("injected"))
					}
					return c.Create(ctx, obj, opts...)
				},
			})
			roles := &tenant.ClusterRoles{Client: mgr.GetClient()}
			if err := mgr.Add(roles); err != nil {
				return err
			}
			return (&tenant.Reconciler{Client: flaky, ClusterRolesReady: roles.Ready(),
				Name: fmt.Sprintf("tenant-%d", managers.Add(1))}).SetupWithManager(mgr)
		}))
	tn := newTenant(name(t, "t"), nil)
	createTenant(t, tn)
	ns := namespace(t, name(t, "ns"), tn.Name)
	eventually(t, "the failure reported", func(ctx context.Context) error {
		got, err := getTenant(ctx, tn.Name)
		if err != nil {
			return err
		}
		c := conditions.Get(got, tenancyv1alpha1.NamespacesConfiguredCondition)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tenancyv1alpha1.ReasonApplyFailed || !strings.Contains(c.Message, "injected") {
			return fmt.Errorf("NamespacesConfigured %+v", c)
		}
		if r := conditions.Get(got, conditions.Ready); r == nil || r.Status != metav1.ConditionFalse {
			return fmt.Errorf("Ready %+v", r)
		}
		return nil
	})
	failing.Store(false)
	tn = waitTenant(t, tn.Name, true, ns)
	eventually(t, "children", func(ctx context.Context) error { return checkChildren(ctx, tn, ns) })
}

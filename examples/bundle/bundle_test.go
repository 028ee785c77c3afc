package bundle_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/steadyk8s/steady/applyset"
	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/testenv"

	"github.com/steadyk8s/steady/examples/bundle"
	bundlev1alpha1 "github.com/steadyk8s/steady/examples/bundle/api/v1alpha1"
)

var env = testenv.New(
	testenv.WithControllerManager{},
	testenv.WithCRDs{Paths: []string{"config/crd"}},
	testenv.WithScheme{Scheme: newScheme()},
)

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, bundle.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

const (
	timeout          = 60 * time.Second
	foreignFinalizer = "example.com/keep"
	foreignCondition = "example.com/Audited"
)

// start runs a Bundle controller in a manager whose requests counter counts.
func start(t *testing.T, counter *testenv.RequestCounter) *bundle.Reconciler {
	t.Helper()
	// A name of its own: the quiet check reads the controller's metrics.
	r := &bundle.Reconciler{Name: strings.ToLower(t.Name())}
	env.StartManager(t,
		testenv.WithTransport(counter.Wrap),
		testenv.WithManagerOptions{Controller: config.Controller{SkipNameValidation: ptr.To(true)}},
		testenv.WithSetup(func(mgr ctrl.Manager) error {
			r.Client = mgr.GetClient()
			return r.SetupWithManager(mgr)
		}))
	return r
}

// fixture is a Bundle's world: its namespace, the Namespace and CRD group
// it creates (unique per test, as CRDs and Namespaces are cluster-wide).
type fixture struct {
	ns, appNS, group string
}

func newFixture(t *testing.T) fixture {
	ns := env.Namespace(t)
	return fixture{ns: ns, appNS: ns + "-app", group: ns + ".example.com"}
}

func (f fixture) namespace() string {
	return "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + f.appNS + "}\n"
}

func (f fixture) crd() string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: carts.%[1]s}
spec:
  group: %[1]s
  scope: Namespaced
  names: {plural: carts, singular: cart, kind: Cart, listKind: CartList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              items: {type: integer}
`, f.group)
}

func (f fixture) cart(name string) string {
	return fmt.Sprintf("apiVersion: %s/v1\nkind: Cart\nmetadata: {name: %s, namespace: %s}\nspec: {items: 3}\n", f.group, name, f.appNS)
}

func (f fixture) configMap(name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s}\ndata: {k: v}\n", name, f.appNS)
}

func (f fixture) serviceAccount(name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: %s, namespace: %s}\n", name, f.appNS)
}

func docs(d ...string) string { return strings.Join(d, "---\n") }

func (f fixture) cartObj(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: f.group, Version: "v1", Kind: "Cart"})
	u.SetNamespace(f.appNS)
	u.SetName(name)
	return u
}

func (f fixture) members() []client.Object {
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.appNS}},
		&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "carts." + f.group}},
		f.cartObj("demo"),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.appNS, Name: "settings"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: f.appNS, Name: "app"}},
	}
}

func exists(t *testing.T, o client.Object) bool {
	t.Helper()
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object))
	switch {
	case err == nil:
		return true
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return false
	}
	t.Fatalf("get %s: %v", o.GetName(), err)
	return false
}

// eventually polls cond, reading through env.Client, until it holds.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, msg := cond()
		last = msg
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not reached within %v: %s", what, timeout, last)
	}
}

func get(t *testing.T, key client.ObjectKey) *bundlev1alpha1.Bundle {
	t.Helper()
	b := &bundlev1alpha1.Bundle{}
	if err := env.Client.Get(context.Background(), key, b); err != nil {
		t.Fatalf("get Bundle %s: %v", key, err)
	}
	return b
}

// readyAt waits until the Bundle is Ready for its current generation.
func readyAt(t *testing.T, key client.ObjectKey) *bundlev1alpha1.Bundle {
	t.Helper()
	var b *bundlev1alpha1.Bundle
	eventually(t, "Bundle Ready", func() (bool, string) {
		b = get(t, key)
		ready := conditions.Get(b, conditions.Ready)
		return ready != nil && ready.Status == metav1.ConditionTrue && b.Status.ObservedGeneration == b.Generation &&
			ready.ObservedGeneration == b.Generation, fmt.Sprintf("%+v", b.Status)
	})
	return b
}

func actions(b *bundlev1alpha1.Bundle) map[string]string {
	m := map[string]string{}
	for _, o := range b.Status.Objects {
		m[o.Kind+" "+o.Name] = o.Action
	}
	return m
}

// TestBundleLifecycle walks a Bundle holding a Namespace, a CRD, a custom
// resource of it, a ConfigMap and (from a ConfigMap source) a ServiceAccount
// through the suite: convergence, no writes when converged, removal,
// foreign data surviving, deletion that leaves nothing behind.
func TestBundleLifecycle(t *testing.T) {
	ctx := context.Background()
	var counter testenv.RequestCounter
	r := start(t, &counter)
	f := newFixture(t)

	source := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "extra"},
		Data:       map[string]string{"sa.yaml": f.serviceAccount("app")},
	}
	if err := env.Client.Create(ctx, source); err != nil {
		t.Fatal(err)
	}
	b := &bundlev1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "shop"},
		Spec: bundlev1alpha1.BundleSpec{Manifests: []bundlev1alpha1.Source{
			{Inline: docs(f.namespace(), f.crd(), f.cart("demo"), f.configMap("settings"))},
			{ConfigMap: &bundlev1alpha1.ConfigMapSource{Name: "extra"}},
		}},
	}
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(b)

	// 1. Convergence: every member is there, the status says so.
	b = readyAt(t, key)
	for _, o := range f.members() {
		if !exists(t, o) {
			t.Errorf("member %T %s missing", o, o.GetName())
		}
	}
	if b.Status.Members != 5 || b.Status.Failed != 0 || !strings.HasPrefix(b.Status.ApplySetID, "applyset-") {
		t.Errorf("status after convergence: %+v", b.Status)
	}
	if !finalizerOf(b, bundle.Finalizer) || b.Labels[applyset.IDLabel] != b.Status.ApplySetID {
		t.Errorf("Bundle not a parent with the prune finalizer: labels %v, finalizers %v", b.Labels, b.Finalizers)
	}
	if conditions.Get(b, conditions.Reconciling) != nil || conditions.Get(b, conditions.Stalled) != nil {
		t.Errorf("converged Bundle still Reconciling or Stalled: %+v", b.Status.Conditions)
	}
	if got := kstatus(t, b); got != status.CurrentStatus {
		t.Errorf("kstatus of a converged Bundle: %s", got)
	}
	sa := &corev1.ServiceAccount{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: f.appNS, Name: "app"}, sa); err != nil || sa.Labels[applyset.PartOfLabel] != b.Status.ApplySetID {
		t.Errorf("ServiceAccount from the ConfigMap source: %v, labels %v", err, sa.Labels)
	}

	// 2. Converged: repeated reconciles through the manager's client write nothing.
	assertNoWrites(t, r, &counter, key)

	// 4. A foreign condition and a foreign finalizer survive the reconciles
	// that follow (removal below included).
	addForeign(t, key)

	// 3. Removal: the Cart and the ConfigMap leave the inline list, and the
	// ConfigMap source now names another ServiceAccount: three prunes.
	b = get(t, key)
	b.Spec.Manifests[0].Inline = docs(f.namespace(), f.crd())
	if err := env.Client.Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	source.Data = map[string]string{"sa.yaml": f.serviceAccount("app2")}
	if err := env.Client.Update(ctx, source); err != nil {
		t.Fatal(err)
	}
	eventually(t, "removed members pruned", func() (bool, string) {
		b = get(t, key)
		return !exists(t, f.cartObj("demo")) &&
			!exists(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.appNS, Name: "settings"}}) &&
			!exists(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: f.appNS, Name: "app"}}) &&
			exists(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: f.appNS, Name: "app2"}}) &&
			b.Status.Members == 3, fmt.Sprintf("%+v", b.Status)
	})
	b = readyAt(t, key)
	if got := actions(b); got["Cart demo"] == "Applied" || got["ConfigMap settings"] == "Applied" || len(b.Status.Objects) < 3 {
		t.Errorf("status after removal lists removed members as applied: %v", got)
	}
	if !exists(t, f.members()[0]) || !exists(t, f.members()[1]) {
		t.Error("the Namespace or the CRD went, though still listed")
	}
	assertNoWrites(t, r, &counter, key)
	assertForeign(t, key)

	// 5. Deletion: the finalizer prunes every member, the Namespace and the
	// CRD included, and the Bundle goes only once they are gone.
	if err := env.Client.Delete(ctx, get(t, key)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "prune finalizer released", func() (bool, string) {
		b = get(t, key)
		return !finalizerOf(b, bundle.Finalizer), fmt.Sprintf("finalizers %v, status %+v", b.Finalizers, b.Status)
	})
	for _, o := range f.members() {
		if exists(t, o) {
			t.Errorf("member %T %s left after the Bundle's finalizer was released", o, o.GetName())
		}
	}
	assertForeign(t, key)
	removeForeignFinalizer(t, key)
	eventually(t, "Bundle gone", func() (bool, string) {
		return !exists(t, &bundlev1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "shop"}}), ""
	})
}

// TestManifestErrorStallsWithoutHotLoop: a manifest that does not parse is
// Stalled and Ready=False with the parse error, keeps what was applied,
// and costs no write on further reconciles; fixing it recovers.
func TestManifestErrorStallsWithoutHotLoop(t *testing.T) {
	ctx := context.Background()
	var counter testenv.RequestCounter
	r := start(t, &counter)
	f := newFixture(t)
	b := &bundlev1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "broken"},
		Spec: bundlev1alpha1.BundleSpec{Manifests: []bundlev1alpha1.Source{
			{Inline: docs(f.namespace(), f.configMap("settings"))},
		}},
	}
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(b)
	readyAt(t, key)

	cases := []struct {
		name, manifest, reason, message string
	}{
		{"no kind", "apiVersion: v1\nmetadata: {name: x}\n", bundlev1alpha1.ReasonManifestError, "spec.manifests[1].inline"},
		{"bad YAML", "apiVersion: v1\nkind: [\n", bundlev1alpha1.ReasonManifestError, "spec.manifests[1].inline"},
		{"unknown kind", "apiVersion: nowhere.example.com/v1\nkind: Ghost\nmetadata: {name: x, namespace: " + f.appNS + "}\n", bundlev1alpha1.ReasonManifestError, "Ghost"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := get(t, key)
			b.Spec.Manifests = []bundlev1alpha1.Source{{Inline: docs(f.namespace(), f.configMap("settings"))}, {Inline: tc.manifest}}
			if err := env.Client.Update(ctx, b); err != nil {
				t.Fatal(err)
			}
			eventually(t, "Stalled", func() (bool, string) {
				b = get(t, key)
				return conditions.IsTrue(b, conditions.Stalled) && b.Status.ObservedGeneration == b.Generation, fmt.Sprintf("%+v", b.Status.Conditions)
			})
			ready := conditions.Get(b, conditions.Ready)
			if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != tc.reason || !strings.Contains(ready.Message, tc.message) {
				t.Errorf("Ready = %+v, want False %s mentioning %q", ready, tc.reason, tc.message)
			}
			if conditions.Get(b, conditions.Reconciling) != nil {
				t.Error("Stalled and Reconciling at once")
			}
			if got := kstatus(t, b); got != status.FailedStatus {
				t.Errorf("kstatus of a stalled Bundle: %s", got)
			}
			if !exists(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.appNS, Name: "settings"}}) {
				t.Error("a bad manifest pruned what was applied")
			}
			// Not a hot loop: no error (no backoff retries), no write.
			quiet(t, r, key)
			counter.Reset()
			for range 3 {
				if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
					t.Fatalf("Reconcile of a stalled Bundle returned %v; it would be retried", err)
				}
			}
			if counter.Writes() != 0 {
				t.Errorf("stalled Bundle: %d writes over 3 reconciles (%s)", counter.Writes(), &counter)
			}
		})
	}

	// Fixed: Ready again, Stalled gone.
	b = get(t, key)
	b.Spec.Manifests = b.Spec.Manifests[:1]
	if err := env.Client.Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	b = readyAt(t, key)
	if conditions.Get(b, conditions.Stalled) != nil {
		t.Errorf("Stalled after the fix: %+v", b.Status.Conditions)
	}
	deleteAndWait(t, key)
}

// TestMissingConfigMapStallsUntilItAppears: the ConfigMap watch brings the
// Bundle back when its source appears.
func TestMissingConfigMapStallsUntilItAppears(t *testing.T) {
	ctx := context.Background()
	var counter testenv.RequestCounter
	start(t, &counter)
	f := newFixture(t)
	b := &bundlev1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "later"},
		Spec: bundlev1alpha1.BundleSpec{Manifests: []bundlev1alpha1.Source{
			{Inline: f.namespace()},
			{ConfigMap: &bundlev1alpha1.ConfigMapSource{Name: "extra", Key: "sa.yaml"}},
		}},
	}
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(b)
	eventually(t, "Stalled on the missing ConfigMap", func() (bool, string) {
		b = get(t, key)
		c := conditions.Get(b, conditions.Stalled)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == bundlev1alpha1.ReasonConfigMapMissing, fmt.Sprintf("%+v", b.Status.Conditions)
	})
	if err := env.Client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "extra"},
		Data:       map[string]string{"sa.yaml": f.serviceAccount("app")},
	}); err != nil {
		t.Fatal(err)
	}
	readyAt(t, key)
	if !exists(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: f.appNS, Name: "app"}}) {
		t.Error("ServiceAccount of the ConfigMap not applied")
	}
	deleteAndWait(t, key)
	if exists(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.appNS}}) {
		t.Error("the Bundle's Namespace outlived it")
	}
}

func deleteAndWait(t *testing.T, key client.ObjectKey) {
	t.Helper()
	if err := env.Client.Delete(context.Background(), get(t, key)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Bundle gone", func() (bool, string) {
		return !exists(t, &bundlev1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}), ""
	})
}

func assertNoWrites(t *testing.T, r *bundle.Reconciler, counter *testenv.RequestCounter, key client.ObjectKey) {
	t.Helper()
	quiet(t, r, key)
	counter.Reset()
	for range 3 {
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	if counter.Writes() != 0 {
		t.Errorf("3 reconciles of a converged Bundle wrote %d times (%s)", counter.Writes(), counter)
	}
	t.Logf("3 reconciles of a converged Bundle: %s", counter)
}

// quiet waits until the controller is idle: the manager's cache holds what
// the API server does, and the controller has nothing queued or running,
// five polls in a row. Otherwise a reconcile that the controller's own writes
// queued (the finalizer it adds passes GenerationChanged), running on a
// snapshot older than its status write, could write during the count.
func quiet(t *testing.T, r *bundle.Reconciler, key client.ObjectKey) {
	t.Helper()
	calm := 0
	eventually(t, "controller idle", func() (bool, string) {
		cached := &bundlev1alpha1.Bundle{}
		if err := r.Client.Get(context.Background(), key, cached); err != nil {
			return false, err.Error()
		}
		live := get(t, key)
		busy := gauge(t, "controller_runtime_active_workers", r.Name) + gauge(t, "workqueue_depth", r.Name)
		if cached.ResourceVersion != live.ResourceVersion || busy > 0 {
			calm = 0
			return false, fmt.Sprintf("cache at %s, server at %s, %v reconciles queued or running", cached.ResourceVersion, live.ResourceVersion, busy)
		}
		calm++
		return calm >= 5, ""
	})
}

// gauge reads a controller-runtime gauge labelled with the controller's name.
func gauge(t *testing.T, name, controller string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if (l.GetName() == "controller" || l.GetName() == "name") && l.GetValue() == controller {
					sum += m.GetGauge().GetValue()
					break
				}
			}
		}
	}
	return sum
}

// kstatus computes the Bundle's status as kubectl wait, Flux and cli-utils do.
func kstatus(t *testing.T, b *bundlev1alpha1.Bundle) status.Status {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(b)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(bundlev1alpha1.GroupVersion.WithKind("Bundle"))
	res, err := status.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

func finalizerOf(o client.Object, name string) bool {
	for _, f := range o.GetFinalizers() {
		if f == name {
			return true
		}
	}
	return false
}

func addForeign(t *testing.T, key client.ObjectKey) {
	t.Helper()
	ctx := context.Background()
	b := get(t, key)
	b.Finalizers = append(b.Finalizers, foreignFinalizer)
	if err := env.Client.Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	b.Status.Conditions = append(b.Status.Conditions, metav1.Condition{
		Type: foreignCondition, Status: metav1.ConditionTrue, Reason: "Checked", LastTransitionTime: metav1.Now(),
	})
	if err := env.Client.Status().Update(ctx, b); err != nil {
		t.Fatal(err)
	}
}

func assertForeign(t *testing.T, key client.ObjectKey) {
	t.Helper()
	b := get(t, key)
	if !finalizerOf(b, foreignFinalizer) {
		t.Errorf("foreign finalizer lost: %v", b.Finalizers)
	}
	if c := conditions.Get(b, foreignCondition); c == nil || c.Reason != "Checked" {
		t.Errorf("foreign condition lost: %+v", b.Status.Conditions)
	}
}

func removeForeignFinalizer(t *testing.T, key client.ObjectKey) {
	t.Helper()
	eventually(t, "foreign finalizer removed", func() (bool, string) {
		b := get(t, key)
		var keep []string
		for _, f := range b.Finalizers {
			if f != foreignFinalizer {
				keep = append(keep, f)
			}
		}
		b.Finalizers = keep
		err := env.Client.Update(context.Background(), b)
		return err == nil, fmt.Sprint(err)
	})
}

// TestServerFailuresAreRetriedNotStalled: a 500 from the API server, on the
// dry run or on the real apply of a member, is Reconciling (retried with
// backoff), never Stalled; the Bundle converges once the server recovers.
func TestServerFailuresAreRetriedNotStalled(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dryRun bool
	}{
		{"real apply", false},
		{"dry run", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t)
			direct, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
			if err != nil {
				t.Fatal(err)
			}
			var failing atomic.Bool
			faulty := interceptor.NewClient(direct, interceptor.Funcs{
				Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
					o := &client.ApplyOptions{}
					o.ApplyOptions(opts)
					name := ""
					switch n := obj.(type) {
					case interface{ GetName() string }: // applyset's, from an Unstructured
						name = n.GetName()
					case interface{ GetName() *string }: // a typed apply configuration
						name = ptr.Deref(n.GetName(), "")
					}
					dry := slices.Contains(o.DryRun, metav1.DryRunAll)
					if failing.Load() && dry == tc.dryRun && name == "settings" {
						return apierrors.NewInternalError(errors.New("injected"))
					}
					return c.Apply(ctx, obj, opts...)
				},
			})
			r := &bundle.Reconciler{Name: strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))}
			env.StartManager(t,
				testenv.WithManagerOptions{Controller: config.Controller{SkipNameValidation: ptr.To(true)}},
				testenv.WithSetup(func(mgr ctrl.Manager) error {
					r.Client = faulty
					return r.SetupWithManager(mgr)
				}))
			failing.Store(true)
			b := &bundlev1alpha1.Bundle{
				ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "flaky"},
				Spec:       bundlev1alpha1.BundleSpec{Manifests: []bundlev1alpha1.Source{{Inline: docs(f.namespace(), f.configMap("settings"))}}},
			}
			if err := env.Client.Create(ctx, b); err != nil {
				t.Fatal(err)
			}
			key := client.ObjectKeyFromObject(b)
			eventually(t, "Reconciling ApplyFailed", func() (bool, string) {
				b = get(t, key)
				c := conditions.Get(b, conditions.Reconciling)
				return c != nil && c.Reason == bundlev1alpha1.ReasonApplyFailed, fmt.Sprintf("%+v", b.Status.Conditions)
			})
			if conditions.Get(b, conditions.Stalled) != nil || !isFalse(b, conditions.Ready) {
				t.Errorf("a server failure: %+v", b.Status.Conditions)
			}
			failing.Store(false)
			readyAt(t, key)
			deleteAndWait(t, key)
		})
	}
}

// isFalse reports whether obj has the condition with status False.
func isFalse(obj conditions.Getter, conditionType string) bool {
	c := conditions.Get(obj, conditionType)
	return c != nil && c.Status == metav1.ConditionFalse
}

package ownership_test

import (
	"context"
	"errors"
	"os"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/steadyk8s/steady/indexer"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/testenv"
)

// Gizmo (testdata/crds) is a kind without a status subresource.
var env = testapi.NewEnv(testenv.WithCRDPaths{"testdata/crds"})

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

func owner(t *testing.T, ns, name string) *testapi.Widget {
	t.Helper()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := env.Client.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

func counting(t *testing.T) (client.Client, *testapi.Counter) {
	t.Helper()
	c, n, err := testapi.NewCountingClient(env.Config, env.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	// Warm the REST mapper so that discovery does not blur the counts.
	if _, err := c.IsObjectNamespaced(&appsv1.Deployment{}); err != nil {
		t.Fatal(err)
	}
	return c, n
}

// deployment and service set their specs wholesale, as operators do: every
// field the API server defaults is dropped by the assignment.
func deployment(d *appsv1.Deployment, image string) ownership.MutateFn {
	return func() error {
		labels := map[string]string{"app": d.Name}
		d.Spec = appsv1.DeploymentSpec{
			Replicas: new(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image, Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}},
			},
		}
		return nil
	}
}

func service(s *corev1.Service) ownership.MutateFn {
	return func() error {
		s.Spec = corev1.ServiceSpec{Selector: map[string]string{"app": s.Name},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}
		return nil
	}
}

type createOr func(context.Context, client.Client, client.Object, client.Object, ownership.MutateFn, ...ownership.Adopt) (controllerutil.OperationResult, error)

func createOrUpdate(ctx context.Context, c client.Client, o, child client.Object, f ownership.MutateFn, adopt ...ownership.Adopt) (controllerutil.OperationResult, error) {
	var opts []ownership.CreateOrUpdateOption
	for _, a := range adopt {
		opts = append(opts, a)
	}
	return ownership.CreateOrUpdate(ctx, c, o, child, f, opts...)
}

func createOrPatch(ctx context.Context, c client.Client, o, child client.Object, f ownership.MutateFn, adopt ...ownership.Adopt) (controllerutil.OperationResult, error) {
	var opts []ownership.CreateOrPatchOption
	for _, a := range adopt {
		opts = append(opts, a)
	}
	return ownership.CreateOrPatch(ctx, c, o, child, f, opts...)
}

func TestNoWriteWhenTheServerDefaultedFields(t *testing.T) {
	env.Require(t)
	for _, tc := range []struct {
		name string
		fn   createOr
	}{{"CreateOrUpdate", createOrUpdate}, {"CreateOrPatch", createOrPatch}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, n := counting(t)
			ns := env.Namespace(t)
			o := owner(t, ns, "app")
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
			s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
			for _, step := range []struct {
				image string
				want  controllerutil.OperationResult
			}{{"nginx:1", "created"}, {"nginx:1", "unchanged"}, {"nginx:1", "unchanged"}, {"nginx:2", "updated"}, {"nginx:2", "unchanged"}} {
				n.Reset()
				d = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
				op, err := tc.fn(ctx, c, o, d, deployment(d, step.image))
				if err != nil || op != step.want {
					t.Fatalf("deployment %s: %s, %v; want %s", step.image, op, err, step.want)
				}
				s = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
				sop, err := tc.fn(ctx, c, o, s, service(s))
				if err != nil {
					t.Fatal(err)
				}
				wantWrites := 0
				if op != controllerutil.OperationResultNone {
					wantWrites++
				}
				if sop == controllerutil.OperationResultCreated {
					wantWrites++
				} else if sop != controllerutil.OperationResultNone {
					t.Errorf("service: %s, want unchanged", sop)
				}
				if n.Writes() != wantWrites || n.Get("GET") != 2 {
					t.Errorf("after %s/%s: requests %s, want GET=2 and %d writes", op, sop, n, wantWrites)
				}
				// The budget: at most one dry run per existing child (both
				// differ from the live object by the dropped defaults).
				if dry := n.Get("DRYRUN-PUT") + n.Get("DRYRUN-PATCH"); dry > 2 {
					t.Errorf("after %s/%s: requests %s, want at most 2 dry runs", op, sop, n)
				}
			}
			var got appsv1.Deployment
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(d), &got); err != nil {
				t.Fatal(err)
			}
			if got.Spec.Template.Spec.Containers[0].Image != "nginx:2" || !metav1.IsControlledBy(&got, o) {
				t.Errorf("stored deployment: image %s, controlled by owner %v", got.Spec.Template.Spec.Containers[0].Image, metav1.IsControlledBy(&got, o))
			}
			if got.Spec.Template.Spec.Containers[0].ImagePullPolicy == "" || got.Spec.RevisionHistoryLimit == nil {
				t.Error("the server's defaults are not on the stored object; the test proves nothing")
			}
		})
	}
}

// TestControllerutilLoopsOnTheSameMutate is the baseline: controllerutil's
// CreateOrUpdate writes on every call for the same wholesale mutate.
func TestControllerutilLoopsOnTheSameMutate(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "app")
	for i := 0; i < 3; i++ {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
		mutate := deployment(d, "nginx:1")
		n.Reset()
		op, err := controllerutil.CreateOrUpdate(ctx, c, d, func() error {
			_ = mutate()
			return controllerutil.SetControllerReference(o, d, c.Scheme())
		})
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && (op != controllerutil.OperationResultUpdated || n.Get("PUT") != 1) {
			t.Errorf("call %d: %s, %s; the baseline no longer loops", i, op, n)
		}
	}
}

func TestAnotherControllersChildIsNotStolen(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	a, b := owner(t, ns, "a"), owner(t, ns, "b")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}}
	if _, err := ownership.CreateOrUpdate(ctx, c, a, cm, nil); err != nil {
		t.Fatal(err)
	}
	for _, fn := range []createOr{createOrUpdate, createOrPatch} {
		n.Reset()
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}}
		_, err := fn(ctx, c, b, cm, func() error { cm.Data = map[string]string{"k": "v"}; return nil })
		var aoe *ownership.AlreadyOwnedError
		if !errors.As(err, &aoe) || aoe.Controller != "Widget a" || aoe.Owner != "Widget "+ns+"/b" || aoe.Child != "ConfigMap "+ns+"/shared" {
			t.Fatalf("error = %v, want an AlreadyOwnedError naming both owners", err)
		}
		if n.Writes() != 0 {
			t.Errorf("requests %s: a refused adoption wrote", n)
		}
	}
	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}}
	if op, err := ownership.CreateOrUpdate(ctx, c, b, cm, nil, ownership.Adopt{}); err != nil || op != controllerutil.OperationResultUpdated {
		t.Fatalf("adopt: %s, %v", op, err)
	}
	var got corev1.ConfigMap
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &got)
	if !metav1.IsControlledBy(&got, b) || len(got.OwnerReferences) != 1 {
		t.Errorf("after adoption: owners %v", got.OwnerReferences)
	}
}

func TestInvalidReferencesAreRefusedBeforeAnyWrite(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns, other := env.Namespace(t), env.Namespace(t)
	o := owner(t, ns, "o")
	noUID := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ghost"}}
	for _, tc := range []struct {
		name  string
		owner client.Object
		child client.Object
	}{
		{"owner without UID", noUID, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}}},
		{"owner in another namespace", o, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "x"}}},
		{"namespaced owner of a cluster-scoped child", o, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "steady-test-x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n.Reset()
			for _, fn := range []createOr{createOrUpdate, createOrPatch} {
				_, err := fn(ctx, c, tc.owner, tc.child, nil)
				var ioe *ownership.InvalidOwnerError
				if !errors.As(err, &ioe) {
					t.Errorf("error = %v, want *InvalidOwnerError", err)
				}
			}
			_, err := ownership.Apply(ctx, c, tc.owner, tc.child, "steady-test")
			var ioe *ownership.InvalidOwnerError
			if !errors.As(err, &ioe) {
				t.Errorf("Apply error = %v, want *InvalidOwnerError", err)
			}
			if n.Writes() != 0 || n.Get("GET") != 0 {
				t.Errorf("requests %s before refusing", n)
			}
		})
	}
}

func TestApplyIsIdempotent(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	a, b := owner(t, ns, "a"), owner(t, ns, "b")
	desired := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"k": "v"}}
	}
	for i, want := range []controllerutil.OperationResult{"created", "unchanged", "unchanged"} {
		cm := desired()
		if op, err := ownership.Apply(ctx, c, a, cm, "steady-test"); err != nil || op != want {
			t.Fatalf("apply %d: %s, %v; want %s", i, op, err, want)
		}
		if !metav1.IsControlledBy(cm, a) || cm.Data["k"] != "v" {
			t.Errorf("apply %d: child holds %+v", i, cm)
		}
	}
	n.Reset()
	_, err := ownership.Apply(ctx, c, b, desired(), "steady-test")
	var aoe *ownership.AlreadyOwnedError
	if !errors.As(err, &aoe) || n.Writes() != 0 {
		t.Fatalf("apply by another owner: %v (requests %s)", err, n)
	}
	cm := desired()
	if op, err := ownership.Apply(ctx, c, b, cm, "steady-test", ownership.Adopt{}); err != nil || op != controllerutil.OperationResultUpdated {
		t.Fatalf("adopting apply: %s, %v", op, err)
	}
	if !metav1.IsControlledBy(cm, b) || len(cm.OwnerReferences) != 1 {
		t.Errorf("after adoption: %v", cm.OwnerReferences)
	}
}

func TestNonControllerReferences(t *testing.T) {
	env.Require(t)
	ns := env.Namespace(t)
	a, b := owner(t, ns, "a"), owner(t, ns, "b")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns}}
	if ok, err := ownership.SetControllerReference(a, cm, env.Scheme); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := ownership.SetOwnerReference(b, cm, env.Scheme); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, _ := ownership.SetOwnerReference(b, cm, env.Scheme); ok {
		t.Error("setting the same reference again reported a change")
	}
	if ok, _ := ownership.SetOwnerReference(a, cm, env.Scheme); ok || !metav1.IsControlledBy(cm, a) {
		t.Error("a plain reference from the controller changed or demoted it")
	}
	if !ownership.RemoveOwnerReference(b, cm) || ownership.RemoveOwnerReference(b, cm) || len(cm.OwnerReferences) != 1 {
		t.Errorf("RemoveOwnerReference: %v", cm.OwnerReferences)
	}
}

func TestListChildren(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	a, b := owner(t, ns, "a"), owner(t, ns, "b")
	for i, o := range []*testapi.Widget{a, a, b} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: string(rune('x' + i))}}
		if _, err := ownership.CreateOrUpdate(ctx, env.Client, o, cm, nil); err != nil {
			t.Fatal(err)
		}
	}
	// A child of an earlier owner named a, since deleted: not a's.
	stale := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stale", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: testapi.GroupVersion.String(), Kind: "Widget", Name: "a", UID: "old-uid", Controller: new(true)}}}}
	if err := env.Client.Create(ctx, stale); err != nil {
		t.Fatal(err)
	}
	names := func(c client.Client) []string {
		var list corev1.ConfigMapList
		if err := ownership.ListChildren(ctx, c, a, &list); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, i := range list.Items {
			out = append(out, i.Name)
		}
		sort.Strings(out)
		return out
	}
	if got := names(env.Client); len(got) != 2 || got[0] != "x" || got[1] != "y" {
		t.Errorf("children through a direct client (list and filter) = %v", got)
	}

	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := indexer.ControllerOwner[*corev1.ConfigMap]().Register(ctx, mgr.GetFieldIndexer()); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- mgr.Start(mctx) }()
	defer func() { cancel(); <-done }()
	mgr.GetCache().WaitForCacheSync(mctx)
	deadline := time.Now().Add(10 * time.Second)
	for got := names(mgr.GetClient()); len(got) != 2 || got[0] != "x" || got[1] != "y"; got = names(mgr.GetClient()) {
		if time.Now().After(deadline) {
			t.Fatalf("children through the cache index = %v", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCreateOrPatchWritesStatus(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "parent")
	for i, want := range []controllerutil.OperationResult{"created", "unchanged", "updatedStatusOnly", "unchanged"} {
		phase := "Pending"
		if i >= 2 {
			phase = "Running"
		}
		child := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child"}}
		n.Reset()
		op, err := ownership.CreateOrPatch(ctx, c, o, child, func() error {
			child.Spec.Size = 3
			child.Status.Phase = phase
			return nil
		})
		if err != nil || op != want {
			t.Fatalf("call %d: %s, %v; want %s", i, op, err, want)
		}
		var got testapi.Widget
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(child), &got); err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase != phase || got.Spec.Size != 3 {
			t.Errorf("call %d: stored spec.size %d, status.phase %q", i, got.Spec.Size, got.Status.Phase)
		}
		if op == controllerutil.OperationResultNone && n.Writes() != 0 {
			t.Errorf("call %d: unchanged but wrote: %s", i, n)
		}
	}
}

// TestListChildrenOnADirectClient: a client without the index lists and
// filters, and, once its API server rejected the index, asks with one LIST
// per call, not an indexed LIST bound to fail and then the plain one.
func TestListChildrenOnADirectClient(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	a := owner(t, ns, "a")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}}
	if _, err := ownership.CreateOrUpdate(ctx, c, a, cm, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		n.Reset()
		var list corev1.ConfigMapList
		if err := ownership.ListChildren(ctx, c, a, &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 {
			t.Errorf("call %d: %d children, want 1", i, len(list.Items))
		}
		if want := map[bool]int{true: 2, false: 1}[i == 0]; n.Get("LIST") != want {
			t.Errorf("call %d: requests %s, want LIST=%d", i, n, want)
		}
	}
}

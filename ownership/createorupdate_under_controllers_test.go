package ownership_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/testenv"
)

// workloadEnv starts a control plane whose kube-controller-manager runs the
// deployment and replicaset controllers: a Deployment's status and its
// revision annotation are written by its controller, as on a cluster.
func workloadEnv(t *testing.T) *testenv.Environment {
	t.Helper()
	env.Require(t)
	if testing.Short() {
		t.Skip("starts a second control plane, with the workload controllers")
	}
	e := testapi.NewEnv(testenv.WithControllerManager{Controllers: []string{"deployment", "replicaset"}})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// sharedDeployment is a Deployment "shop" that CreateOrUpdate writes and
// others write too: an autoscaler (replicas, through the scale
// subresource, as the HPA controller does), the deployment controller
// (status, and the revision annotation through the status subresource),
// kubectl (a label, an annotation), a finalizer's controller and another
// (not controlling) owner.
type sharedDeployment struct {
	t     *testing.T
	e     *testenv.Environment
	ns    string
	other *corev1.ConfigMap // the other owner
}

func (s sharedDeployment) live() *appsv1.Deployment {
	s.t.Helper()
	d := &appsv1.Deployment{}
	if err := s.e.Client.Get(context.Background(), types.NamespacedName{Namespace: s.ns, Name: "shop"}, d); err != nil {
		s.t.Fatal(err)
	}
	return d
}

// othersWrite has every other writer write its part.
func (s sharedDeployment) othersWrite() {
	t, ctx, c := s.t, context.Background(), s.e.Client
	t.Helper()
	testenv.Eventually(t, "the deployment controller's first status", func() error {
		if d := s.live(); d.Status.ObservedGeneration != d.Generation {
			return fmt.Errorf("generation %d, status %+v", d.Generation, d.Status)
		}
		return nil
	})
	// The autoscaler's write, without a lock (the deployment controller
	// writes the child all the time).
	if err := c.SubResource("scale").Patch(ctx, s.live(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":3}}`)),
		client.WithSubResourceBody(&autoscalingv1.Scale{}), client.FieldOwner("horizontal-pod-autoscaler")); err != nil {
		t.Fatal(err)
	}
	ref := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","name":%q,"uid":%q}`, s.other.Name, s.other.UID)
	for manager, p := range map[string]client.Patch{
		"kubectl-label":    client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"theirs"}}}`)),
		"kubectl-annotate": client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"note":"theirs"}}}`)),
		"guard":            client.RawPatch(types.JSONPatchType, []byte(`[{"op":"add","path":"/metadata/finalizers","value":["example.com/guard"]}]`)),
		"other-owner":      client.RawPatch(types.JSONPatchType, []byte(`[{"op":"add","path":"/metadata/ownerReferences/-","value":`+ref+`}]`)),
	} {
		if err := c.Patch(ctx, s.live(), p, client.FieldOwner(manager)); err != nil {
			t.Fatal(manager, err)
		}
	}
	t.Cleanup(func() {
		_ = c.Patch(context.Background(), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "shop"}},
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	})
	testenv.Eventually(t, "the deployment controller's status and revision", func() error {
		d := s.live()
		if d.Status.ObservedGeneration != d.Generation || d.Annotations["deployment.kubernetes.io/revision"] == "" || d.Status.Replicas != 3 {
			return fmt.Errorf("generation %d, status %+v, annotations %v", d.Generation, d.Status, d.Annotations)
		}
		return nil
	})
}

// kept checks every other writer's part.
func (s sharedDeployment) kept(what string) {
	s.t.Helper()
	d := s.live()
	var problems []string
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
		problems = append(problems, fmt.Sprintf("replicas %v, not the autoscaler's 3", d.Spec.Replicas))
	}
	if d.Annotations["deployment.kubernetes.io/revision"] == "" || d.Annotations["note"] != "theirs" {
		problems = append(problems, fmt.Sprintf("annotations %v", d.Annotations))
	}
	if d.Labels["team"] != "theirs" {
		problems = append(problems, fmt.Sprintf("labels %v", d.Labels))
	}
	if len(d.Finalizers) != 1 || d.Finalizers[0] != "example.com/guard" {
		problems = append(problems, fmt.Sprintf("finalizers %v", d.Finalizers))
	}
	others := 0
	for _, r := range d.OwnerReferences {
		if r.UID == s.other.UID {
			others++
		}
	}
	if others != 1 || len(d.OwnerReferences) != 2 {
		problems = append(problems, fmt.Sprintf("owner references %v", d.OwnerReferences))
	}
	if len(problems) > 0 {
		s.t.Errorf("%s: others' fields lost: %s", what, strings.Join(problems, "; "))
	}
}

// TestCreateOrUpdateFieldByFieldKeepsOthersUnderTheirControllers:
// CreateOrUpdate with a mutate that sets the child's fields one by one on
// the child as read (docs/ownership.md, Do), through a manager's cache held
// 300 ms back, while the deployment controller writes the child's status:
// the autoscaler's replicas, the controller's revision annotation and
// status, kubectl's label and annotation, another controller's finalizer
// and another owner's reference survive every call, also the one that
// removes our label tier, which goes.
func TestCreateOrUpdateFieldByFieldKeepsOthersUnderTheirControllers(t *testing.T) {
	e := workloadEnv(t)
	ctx := context.Background()
	ns := e.Namespace(t)
	o := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "o"}}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other-owner"}}
	for _, obj := range []client.Object{o, other} {
		if err := e.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	s := sharedDeployment{t: t, e: e, ns: ns, other: other}
	cc := testapi.StartManager(t, e, testapi.ManagerOptions{Delay: 300 * time.Millisecond, Informers: []client.Object{&appsv1.Deployment{}}, Namespace: ns})
	reconcileOnce := func(tier bool) controllerutil.OperationResult {
		t.Helper()
		op, _ := requeue(t, func() (controllerutil.OperationResult, error) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}}
			return ownership.CreateOrUpdate(ctx, cc.Client, o, d, func() error {
				sel := map[string]string{"app": "shop"}
				if d.Labels == nil {
					d.Labels = map[string]string{}
				}
				d.Labels["app"] = "shop"
				if tier {
					d.Labels["tier"] = "web"
				} else {
					delete(d.Labels, "tier")
				}
				if d.CreationTimestamp.IsZero() {
					d.Spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
				}
				d.Spec.Template.Labels = sel
				if len(d.Spec.Template.Spec.Containers) == 0 {
					d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "web"}}
				}
				d.Spec.Template.Spec.Containers[0].Image = "nginx:1"
				return nil
			})
		})
		return op
	}
	if op := reconcileOnce(true); op != controllerutil.OperationResultCreated {
		t.Fatalf("first call: %s", op)
	}
	s.othersWrite()
	for i := range 3 {
		reconcileOnce(true)
		s.kept(fmt.Sprintf("call %d with our label", i))
		time.Sleep(100 * time.Millisecond)
	}
	if op := reconcileOnce(false); op != controllerutil.OperationResultUpdated {
		t.Errorf("the call that drops our label tier: %s; want updated", op)
	}
	s.kept("after the call that drops our label tier")
	if d := s.live(); d.Labels["tier"] != "" || d.Labels["app"] != "shop" {
		t.Errorf("labels %v; want tier gone, app kept", d.Labels)
	}
}

// TestWholeWriteUnderControllersIsLogged: the promise of docs/ownership.md
// (Do): "When a write of CreateOrUpdate removes a field another field
// manager set (the child's managedFields say who: every manager but the one
// that set your controller reference), it says so on the context's
// logger, naming each field and manager". A mutate that assigns the spec
// without replicas and the annotations whole, on a child an autoscaler
// scales (through the scale subresource, as the HPA controller does) and
// the deployment controller annotates with its revision (through the
// status subresource), removes the autoscaler's replica count, the
// controller's revision annotation and kubectl's annotation: all three
// are other managers' fields, and the log must name each.
func TestWholeWriteUnderControllersIsLogged(t *testing.T) {
	e := workloadEnv(t)
	ns := e.Namespace(t)
	o := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "o"}}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other-owner"}}
	for _, obj := range []client.Object{o, other} {
		if err := e.Client.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
	s := sharedDeployment{t: t, e: e, ns: ns, other: other}
	ctx, logged := loggedContext()
	whole := func(d *appsv1.Deployment) ownership.MutateFn {
		return func() error {
			sel := map[string]string{"app": "shop"}
			d.Annotations = map[string]string{"ours": "1"}
			d.Spec = appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: sel},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1"}}}},
			}
			return nil
		}
	}
	c := readingThrough(e.Client, e.Client)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}}
	if _, err := ownership.CreateOrUpdate(ctx, c, o, d, whole(d)); err != nil {
		t.Fatal(err)
	}
	s.othersWrite()
	logged()
	before := s.live()
	d = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}}
	if op, err := ownership.CreateOrUpdate(ctx, c, o, d, whole(d)); err != nil || op != controllerutil.OperationResultUpdated {
		t.Fatalf("the whole write: %s, %v", op, err)
	}
	got := logged()
	t.Logf("logged: %s", got)
	for _, want := range []string{
		"metadata.annotations.note (kubectl-annotate)",
		"spec.replicas (horizontal-pod-autoscaler)",
		"metadata.annotations[deployment.kubernetes.io/revision] (kube-controller-manager)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the whole write logged %q; want it to name %s", got, want)
		}
	}
	if after := s.live(); *after.Spec.Replicas == 3 {
		t.Errorf("the autoscaler's replicas were kept: the write removed nothing of it, the test shows nothing")
	}
	if t.Failed() {
		for _, f := range before.ManagedFields {
			t.Logf("managedFields: %s %s subresource=%q %s", f.Manager, f.Operation, f.Subresource, f.FieldsV1.Raw)
		}
	}
}

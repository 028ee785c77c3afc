package ownership_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
)

// shop is what the operator applies of the Deployment "shop": the
// selector, a template label, one container; with the optional parts it
// names: replicas, metadata labels and annotations, env entries.
type shop struct {
	replicas    *int32
	labels      map[string]string
	annotations map[string]string
	env         []string
}

func (s shop) config(ns string) *appsv1ac.DeploymentApplyConfiguration {
	sel := map[string]string{"app": "shop"}
	ctr := corev1ac.Container().WithName("web").WithImage("nginx:1")
	for _, e := range s.env {
		ctr.WithEnv(corev1ac.EnvVar().WithName(e).WithValue("ours"))
	}
	spec := appsv1ac.DeploymentSpec().
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(sel)).
		WithTemplate(corev1ac.PodTemplateSpec().WithLabels(sel).WithSpec(corev1ac.PodSpec().WithContainers(ctr)))
	if s.replicas != nil {
		spec.WithReplicas(*s.replicas)
	}
	d := appsv1ac.Deployment("shop", ns).WithSpec(spec)
	if len(s.labels) > 0 {
		d.WithLabels(s.labels)
	}
	if len(s.annotations) > 0 {
		d.WithAnnotations(s.annotations)
	}
	return d
}

// TestApplyDropsOnlyItsOwnFieldsAmongOtherWriters: an operator applies a
// Deployment through a manager's lagging cache; an autoscaler sets the
// replica count through the scale subresource (as the HPA controller
// does), kubectl adds a label, an annotation, an env entry, and takes over
// an annotation the operator set (kubectl annotate --overwrite). The
// operator's next Apply stops setting the replica count, one of its labels,
// one of its annotations and one env entry: those of its own that no one
// else holds are removed, every other writer's field is kept. After a
// restart (a new manager: nothing remembered) the same configuration is
// unchanged with no write, and dropping one more label removes that label
// only. Setting the annotation kubectl took over is a conflict without
// Force (never fought over), and takes it with Force.
func TestApplyDropsOnlyItsOwnFieldsAmongOtherWriters(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "o")
	key := types.NamespacedName{Namespace: ns, Name: "shop"}
	live := func() *appsv1.Deployment {
		t.Helper()
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, key, d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	envNames := func(d *appsv1.Deployment) []string {
		var out []string
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			out = append(out, e.Name+"="+e.Value)
		}
		return out
	}
	// theirs checks what the other writers set, after each of our applies.
	theirs := func(what string) {
		t.Helper()
		d := live()
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 5 {
			t.Errorf("%s: replicas %v; want the autoscaler's 5", what, d.Spec.Replicas)
		}
		if d.Labels["team"] != "theirs" || d.Annotations["note"] != "theirs" || d.Annotations["shared"] != "theirs" {
			t.Errorf("%s: labels %v, annotations %v; want kubectl's team, note and shared kept", what, d.Labels, d.Annotations)
		}
		if !slices.Contains(envNames(d), "THEIRS=theirs") {
			t.Errorf("%s: env %v; want kubectl's THEIRS kept", what, envNames(d))
		}
	}
	first := shop{
		replicas:    new(int32(2)),
		labels:      map[string]string{"tier": "web", "keep": "ours", "extra": "ours"},
		annotations: map[string]string{"ours/a": "1", "shared": "ours"},
		env:         []string{"A", "B"},
	}
	second := shop{
		labels:      map[string]string{"keep": "ours", "extra": "ours"},
		annotations: map[string]string{},
		env:         []string{"B"},
	}

	t.Run("first manager", func(t *testing.T) {
		cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 300 * time.Millisecond, Informers: []client.Object{&appsv1.Deployment{}}, Namespace: ns})
		if op, err := ownership.Apply(ctx, cc.Client, o, first.config(ns), "shop-operator"); err != nil || op != controllerutil.OperationResultCreated {
			t.Fatalf("first apply: %s, %v", op, err)
		}
		// The autoscaler, through the scale subresource.
		scale := &autoscalingv1.Scale{}
		d := live()
		if err := env.Client.SubResource("scale").Get(ctx, d, scale); err != nil {
			t.Fatal(err)
		}
		scale.Spec.Replicas = 5
		if err := env.Client.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(scale), client.FieldOwner("horizontal-pod-autoscaler")); err != nil {
			t.Fatal(err)
		}
		// kubectl label, kubectl annotate --overwrite, kubectl set env.
		patches := map[string]string{
			"kubectl-label":    `{"metadata":{"labels":{"team":"theirs"}}}`,
			"kubectl-annotate": `{"metadata":{"annotations":{"note":"theirs","shared":"theirs"}}}`,
			"kubectl-set":      `{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"THEIRS","value":"theirs"}]}]}}}}`,
		}
		for _, m := range []string{"kubectl-label", "kubectl-annotate", "kubectl-set"} {
			if err := env.Client.Patch(ctx, live(), client.RawPatch(types.StrategicMergePatchType, []byte(patches[m])), client.FieldOwner(m)); err != nil {
				t.Fatal(m, err)
			}
		}
		theirs("after the other writers")

		// Our next apply drops replicas, tier, ours/a, shared and A: one
		// call, retried as a controller requeues (the cache may be behind).
		op, errs := requeue(t, func() (controllerutil.OperationResult, error) {
			return ownership.Apply(ctx, cc.Client, o, second.config(ns), "shop-operator")
		})
		if op != controllerutil.OperationResultUpdated {
			t.Errorf("the apply that drops fields: %s (errors before: %v); want updated", op, errs)
		}
		theirs("after our apply that drops fields")
		d = live()
		if _, ok := d.Labels["tier"]; ok {
			t.Errorf("our label tier is still there: %v", d.Labels)
		}
		if _, ok := d.Annotations["ours/a"]; ok {
			t.Errorf("our annotation ours/a is still there: %v", d.Annotations)
		}
		if got := envNames(d); slices.Contains(got, "A=ours") || !slices.Contains(got, "B=ours") {
			t.Errorf("env %v; want A gone, B kept", got)
		}
	})

	t.Run("after a restart", func(t *testing.T) {
		cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 300 * time.Millisecond, Informers: []client.Object{&appsv1.Deployment{}}, Namespace: ns})
		cachedSees(t, cc, live())
		cc.Counter.Reset()
		if op, err := ownership.Apply(ctx, cc.Client, o, second.config(ns), "shop-operator"); err != nil || op != controllerutil.OperationResultNone || cc.Counter.Writes() != 0 {
			t.Errorf("the same configuration in a new process: %s, %v (requests %s); want unchanged, no write", op, err, cc.Counter)
		}
		third := second
		third.labels = map[string]string{"keep": "ours"}
		if op, err := ownership.Apply(ctx, cc.Client, o, third.config(ns), "shop-operator"); err != nil || op != controllerutil.OperationResultUpdated {
			t.Errorf("dropping the label extra in a new process: %s, %v; want updated", op, err)
		}
		theirs("after a restart and a dropped label")
		if d := live(); d.Labels["extra"] != "" || d.Labels["keep"] != "ours" {
			t.Errorf("labels %v; want extra gone, keep kept", d.Labels)
		}

		// The annotation kubectl took over: not fought over without Force.
		taken := third
		taken.annotations = map[string]string{"shared": "ours"}
		_, err := ownership.Apply(ctx, cc.Client, o, taken.config(ns), "shop-operator")
		if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "shared") {
			t.Errorf("setting the annotation kubectl took over, without Force: %v; want a conflict naming it", err)
		}
		theirs("after the refused apply")
		if _, err := ownership.Apply(ctx, cc.Client, o, taken.config(ns), "shop-operator", ownership.Force{}); err != nil {
			t.Fatalf("with Force: %v", err)
		}
		if d := live(); d.Annotations["shared"] != "ours" || d.Annotations["note"] != "theirs" || d.Labels["team"] != "theirs" || *d.Spec.Replicas != 5 {
			t.Errorf("with Force: labels %v, annotations %v, replicas %d; want shared ours, the rest theirs", d.Labels, d.Annotations, *d.Spec.Replicas)
		}
	})
}

package ownership_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/ownership"
)

// web is the Deployment an operator wants, as an apply configuration: it
// sets no replica count (an autoscaler's) and nothing of the pod template
// but a label and one container's name and image.
func web(ns, image string) *appsv1ac.DeploymentApplyConfiguration {
	labels := map[string]string{"app": "web"}
	return appsv1ac.Deployment("web", ns).WithSpec(appsv1ac.DeploymentSpec().
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
		WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).
			WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("web").WithImage(image)))))
}

// TestApplyOwnsOnlyWhatItSets: Apply of an apply configuration sends and
// owns the fields it sets, nothing else. An autoscaler's replica count and
// kubectl rollout restart's pod-template annotation, another writer's,
// survive every apply, also one that changes the image, and are never
// fought over: the same configuration applied again stores nothing
// (unchanged). The answer is in the configuration.
func TestApplyOwnsOnlyWhatItSets(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "o")
	c, n := counting(t)
	config := web(ns, "nginx:1")
	if op, err := ownership.Apply(ctx, c, o, config, "steady-test"); err != nil || op != controllerutil.OperationResultCreated {
		t.Fatalf("first apply: %s, %v; want created", op, err)
	}
	if config.UID == nil || config.ResourceVersion == nil {
		t.Fatal("the answer is not in the configuration")
	}
	// The autoscaler and kubectl rollout restart.
	hpa := appsv1ac.Deployment("web", ns).WithSpec(appsv1ac.DeploymentSpec().WithReplicas(5))
	if err := env.Client.Apply(ctx, hpa, client.FieldOwner("autoscaler")); err != nil {
		t.Fatal(err)
	}
	restart := []byte(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"now"}}}}}`)
	d := &appsv1.Deployment{}
	d.Namespace, d.Name = ns, "web"
	if err := env.Client.Patch(ctx, d, client.RawPatch(types.StrategicMergePatchType, restart), client.FieldOwner("kubectl-rollout")); err != nil {
		t.Fatal(err)
	}
	others := func(what string) {
		t.Helper()
		got := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(d), got); err != nil {
			t.Fatal(err)
		}
		if got.Spec.Replicas == nil || *got.Spec.Replicas != 5 || got.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] != "now" {
			t.Errorf("%s: replicas %v, template annotations %v; want the autoscaler's 5 and the restart kept", what, got.Spec.Replicas, got.Spec.Template.Annotations)
		}
		for _, f := range got.ManagedFields {
			if f.Manager == "steady-test" && f.FieldsV1 != nil && strings.Contains(string(f.FieldsV1.Raw), `"f:replicas"`) {
				t.Errorf("%s: steady-test owns spec.replicas: %s", what, f.FieldsV1.Raw)
			}
		}
	}
	others("after the other writers")

	n.Reset()
	again := web(ns, "nginx:1")
	if op, err := ownership.Apply(ctx, c, o, again, "steady-test"); err != nil || op != controllerutil.OperationResultNone || n.Writes() > 1 {
		t.Errorf("the same configuration again: %s, %v (requests %s); want unchanged, at most the apply", op, err, n)
	}
	others("after the same apply")
	if op, err := ownership.Apply(ctx, c, o, web(ns, "nginx:2"), "steady-test"); err != nil || op != controllerutil.OperationResultUpdated {
		t.Errorf("a new image: %s, %v; want updated", op, err)
	}
	others("after a new image")
	n.Reset()
	if op, err := ownership.Apply(ctx, c, o, web(ns, "nginx:2"), "steady-test"); err != nil || op != controllerutil.OperationResultNone || n.Writes() != 0 {
		t.Errorf("converged: %s, %v (requests %s); want unchanged, no write (remembered)", op, err, n)
	}
}

// TestApplyRefusesAConfigurationWithoutKindOrName: a configuration that
// names no kind or no child is an *InvalidOwnerError naming the field,
// before any request.
func TestApplyRefusesAConfigurationWithoutKindOrName(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "o")
	c, n := counting(t)
	noKind := &appsv1ac.DeploymentApplyConfiguration{}
	noKind.WithName("web").WithNamespace(ns)
	for _, tc := range []struct {
		name   string
		config *appsv1ac.DeploymentApplyConfiguration
		field  string
	}{
		{"no kind", noKind, "apiVersion, kind"},
		{"no name", appsv1ac.Deployment("", ns), "metadata.name"},
		{"nil", nil, ""},
	} {
		n.Reset()
		var ioe *ownership.InvalidOwnerError
		_, err := ownership.Apply(ctx, c, o, tc.config, "steady-test")
		if !errors.As(err, &ioe) || ioe.Field != tc.field || n.String() != "" {
			t.Errorf("%s: %v (requests %s); want an *InvalidOwnerError on %q and no request", tc.name, err, n, tc.field)
		}
	}
}

// TestApplyThatRestoresAFieldIsUpdated: a field of ours another writer
// removed (an Update takes it out of every manager's set, ours too) is put
// back by the next apply, and the result says so: updated, not unchanged,
// although the configuration and this manager's applied fields are what
// they were.
func TestApplyThatRestoresAFieldIsUpdated(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "o")
	c, _ := counting(t)
	cfg := func() *corev1ac.ConfigMapApplyConfiguration {
		return corev1ac.ConfigMap("cfg", ns).WithLabels(map[string]string{"app": "web"}).WithData(map[string]string{"k": "v"})
	}
	if _, err := ownership.Apply(ctx, c, o, cfg(), "steady-test"); err != nil {
		t.Fatal(err)
	}
	// kubectl label cm cfg app-
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = ns, "cfg"
	if err := env.Client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"app":null}}}`)), client.FieldOwner("kubectl-label")); err != nil {
		t.Fatal(err)
	}
	again := cfg()
	if op, err := ownership.Apply(ctx, c, o, again, "steady-test"); err != nil || op != controllerutil.OperationResultUpdated {
		t.Errorf("the apply that put the label back: %s, %v; want updated", op, err)
	}
	if again.Labels["app"] != "web" {
		t.Errorf("labels %v in the answer, want app=web back", again.Labels)
	}
}

// TestApplyAnswerReplacesTheConfiguration: the answer replaces what the
// configuration held; a part the caller shares between two configurations
// (one spec for two children) is not written through, so the second child
// is applied with what the caller set, not with the first one's answer.
// A configuration that is not a pointer is refused before any request.
func TestApplyAnswerReplacesTheConfiguration(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "o")
	c, n := counting(t)
	labels := map[string]string{"app": "web"}
	spec := appsv1ac.DeploymentSpec().WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
		WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).
			WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("web").WithImage("nginx:1"))))
	first := appsv1ac.Deployment("one", ns)
	first.Spec = spec
	if _, err := ownership.Apply(ctx, c, o, first, "steady-test"); err != nil {
		t.Fatal(err)
	}
	if first.Spec == nil || first.Spec.Replicas == nil {
		t.Fatal("no answer in the configuration")
	}
	if spec.Replicas != nil || spec.Strategy != nil {
		t.Errorf("the shared spec took the answer's defaults: replicas %v, strategy %v", spec.Replicas, spec.Strategy)
	}
	second := appsv1ac.Deployment("two", ns)
	second.Spec = spec
	if _, err := ownership.Apply(ctx, c, o, second, "steady-test"); err != nil {
		t.Fatal(err)
	}
	got := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "two"}, got); err != nil {
		t.Fatal(err)
	}
	for _, f := range got.ManagedFields {
		if f.Manager == "steady-test" && strings.Contains(string(f.FieldsV1.GetRawBytes()), `"f:replicas"`) {
			t.Errorf("the second child's apply owns spec.replicas (the first one's answer): %s", f.FieldsV1.GetRawBytes())
		}
	}
	n.Reset()
	var ioe *ownership.InvalidOwnerError
	if _, err := ownership.Apply(ctx, c, o, *corev1ac.ConfigMap("v", ns), "steady-test"); !errors.As(err, &ioe) || n.String() != "" {
		t.Errorf("a configuration by value: %v (requests %s); want an *InvalidOwnerError and no request", err, n)
	}
	if _, err := ownership.Apply(ctx, c, o, client.ApplyConfigurationFromUnstructured(nil), "steady-test"); !errors.As(err, &ioe) {
		t.Errorf("an unstructured configuration of nil: %v; want an *InvalidOwnerError", err)
	}
}

package ownership_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
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

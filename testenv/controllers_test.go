package testenv_test

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/testenv"
)

// WithControllerManager{Controllers} runs the workload controllers named: a Deployment gets
// its ReplicaSet, the ReplicaSet its Pods (Pending: no scheduler runs),
// and both their status, written by their controllers.
func TestControllersRunsTheWorkloadControllers(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: new(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}}}
	if err := env.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the Deployment's status from its controller", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		if d.Status.ObservedGeneration != d.Generation || d.Status.Replicas != 2 {
			return fmt.Errorf("status %+v at generation %d", d.Status, d.Generation)
		}
		return nil
	})
	testenv.Eventually(t, "two Pods of its ReplicaSet", func() error {
		var pods corev1.PodList
		if err := env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
			return err
		}
		if len(pods.Items) != 2 {
			return fmt.Errorf("%d Pods", len(pods.Items))
		}
		return nil
	})
}

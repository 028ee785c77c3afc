package ownership_test

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
)

// A wholesale spec assignment writes once, then never again: the fields the
// API server defaulted do not count as differences.
func ExampleCreateOrUpdate() {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "example-"}}
	_ = env.Client.Create(ctx, ns)
	app := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "shop"}}
	_ = env.Client.Create(ctx, app)

	for i := 0; i < 3; i++ {
		deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "shop-web"}}
		op, err := ownership.CreateOrUpdate(ctx, env.Client, app, deploy, func() error {
			labels := map[string]string{"app": "shop"}
			deploy.Spec = appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.29"}}},
				},
			}
			return nil
		})
		fmt.Println(op, err, metav1.IsControlledBy(deploy, app))
	}
	// Output:
	// created <nil> true
	// unchanged <nil> true
	// unchanged <nil> true
}

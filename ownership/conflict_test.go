package ownership_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// A child whose own controller writes its status between the read and the
// write: the write meets a real conflict. With an API reader the call reads
// the child again through it and writes what it wants on what it found
// (one GET, the write again); without one the conflict is returned, and
// nothing is overwritten either way.
func TestAConflictWithTheChildsControllerIsReadAgain(t *testing.T) {
	env.Require(t)
	for _, tc := range fns {
		for _, withReader := range []bool{true, false} {
			t.Run(tc.name+map[bool]string{true: "/APIReader", false: "/no reader"}[withReader], func(t *testing.T) {
				ctx := context.Background()
				c, n := counting(t)
				ns := env.Namespace(t)
				o := owner(t, ns, "app")
				d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
				if _, err := tc.fn(ctx, c, o, d, deployment(d, "nginx:1")); err != nil {
					t.Fatal(err)
				}
				// The deployment controller's status write, right before
				// each of our writes of the object.
				statusWrite := func() {
					live := &appsv1.Deployment{}
					if err := env.Client.Get(ctx, client.ObjectKeyFromObject(d), live); err != nil {
						t.Fatal(err)
					}
					live.Status.ObservedGeneration = live.Generation
					live.Status.Replicas++
					if err := env.Client.Status().Update(ctx, live); err != nil {
						t.Fatal(err)
					}
				}
				raced := 0
				racing := interceptor.NewClient(watchClient(t), interceptor.Funcs{
					Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
						if raced == 0 {
							raced++
							statusWrite()
						}
						return c.Update(ctx, obj, opts...)
					},
					Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
						if raced == 0 {
							raced++
							statusWrite()
						}
						return c.Patch(ctx, obj, p, opts...)
					},
				})
				var writer client.Client = racing
				if withReader {
					writer = readingThrough(racing, c) // c counted: the re-read
				}
				n.Reset()
				d = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
				// A change of a list: the container's ports.
				op, err := tc.fn(ctx, writer, o, d, func() error {
					if err := deployment(d, "nginx:2")(); err != nil {
						return err
					}
					d.Spec.Template.Spec.Containers[0].Ports = append(d.Spec.Template.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: 9090})
					return nil
				})
				live := &appsv1.Deployment{}
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(d), live); err != nil {
					t.Fatal(err)
				}
				if !withReader {
					if !apierrors.IsConflict(err) || op != "" || live.Spec.Template.Spec.Containers[0].Image != "nginx:1" {
						t.Fatalf("without a reader: %s, %v, image %s; want the conflict, no result, nothing written", op, err, live.Spec.Template.Spec.Containers[0].Image)
					}
					return
				}
				if err != nil || op != controllerutil.OperationResultUpdated || n.Get("GET") != 1 {
					t.Fatalf("%s, %v, requests %s; want updated after one GET", op, err, n)
				}
				if live.Spec.Template.Spec.Containers[0].Image != "nginx:2" || live.Status.Replicas != 1 {
					t.Errorf("stored: image %s, status replicas %d; want nginx:2 and the controller's 1 kept",
						live.Spec.Template.Spec.Containers[0].Image, live.Status.Replicas)
				}
			})
		}
	}
}

package ownership_test

import (
	"context"

	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/ownership"
)

// A Job, whose template the API server fills (labels, a selector) and then
// refuses to change: a wholesale mutate writes nothing on the calls after
// the create, also while the Job's status changes; a change of the
// template is refused with an error that says how to set it, and a result
// that is not "unchanged"; the recommended mutate (the template set only
// on create) changes what may change and nothing else.
func TestJobWithImmutableTemplate(t *testing.T) {
	env.Require(t)
	for _, tc := range fns {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, n := counting(t)
			ns := env.Namespace(t)
			o := owner(t, ns, "app")
			template := func(image string) corev1.PodTemplateSpec {
				return corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "work", Image: image}}}}
			}
			wholesale := func(j *batchv1.Job, image string) ownership.MutateFn {
				return func() error {
					// Labels of its own: a Job created without any takes its
					// template's, which the API server fills, and the desired
					// Job then differs from the one created.
					j.Labels = map[string]string{"app": "work"}
					j.Spec = batchv1.JobSpec{BackoffLimit: new(int32(2)), Template: template(image)}
					return nil
				}
			}
			call := func(mutate func(*batchv1.Job) ownership.MutateFn) (controllerutil.OperationResult, error) {
				n.Reset()
				j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "work"}}
				return tc.fn(ctx, c, o, j, mutate(j))
			}
			v1 := func(j *batchv1.Job) ownership.MutateFn { return wholesale(j, "busybox:1") }
			if op, err := call(v1); err != nil || op != controllerutil.OperationResultCreated {
				t.Fatalf("create: %s, %v", op, err)
			}
			for i := range 2 {
				if op, err := call(v1); err != nil || op != controllerutil.OperationResultNone || n.Writes() != 0 {
					t.Fatalf("call %d after the create: %s, %v, requests %s; want unchanged, no write", i, op, err, n)
				}
			}
			// The job controller's status write (none runs here).
			live := &batchv1.Job{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "work"}, live); err != nil {
				t.Fatal(err)
			}
			live.Status.Active = 1
			live.Status.StartTime = &metav1.Time{Time: live.CreationTimestamp.Time}
			if err := env.Client.Status().Update(ctx, live); err != nil {
				t.Fatal(err)
			}
			if op, err := call(v1); err != nil || op != controllerutil.OperationResultNone || n.Writes() != 0 {
				t.Fatalf("after a status write: %s, %v, requests %s; want unchanged, no write", op, err, n)
			}

			// A new image in the template: refused, and said so.
			op, err := call(func(j *batchv1.Job) ownership.MutateFn { return wholesale(j, "busybox:2") })
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.template") ||
				!strings.Contains(err.Error(), "only when the child is created") {
				t.Fatalf("a changed template: %v; want the API server's refusal, naming spec.template and the way out", err)
			}
			if op == controllerutil.OperationResultNone {
				t.Errorf("a refused change reports %q beside its error", op)
			}

			// The recommended mutate: the template only on create, the rest
			// every time.
			op, err = call(func(j *batchv1.Job) ownership.MutateFn {
				return func() error {
					if j.CreationTimestamp.IsZero() {
						j.Spec.Template = template("busybox:2")
					}
					j.Spec.BackoffLimit = new(int32(4))
					return nil
				}
			})
			if err != nil || op != controllerutil.OperationResultUpdated {
				t.Fatalf("the recommended mutate: %s, %v; want updated", op, err)
			}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(live), live); err != nil {
				t.Fatal(err)
			}
			if *live.Spec.BackoffLimit != 4 || live.Spec.Template.Spec.Containers[0].Image != "busybox:1" || live.Status.Active != 1 {
				t.Errorf("stored: backoffLimit %d, image %s, active %d; want 4, busybox:1 kept, 1 kept",
					*live.Spec.BackoffLimit, live.Spec.Template.Spec.Containers[0].Image, live.Status.Active)
			}
		})
	}
}

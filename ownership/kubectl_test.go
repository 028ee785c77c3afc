package ownership_test

import (
	"context"
	"io"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/ownership"
)

// TestRealRolloutRestartIsKept: the kubectl of the control-plane assets
// runs `kubectl rollout restart` on a child. Apply, and CreateOrUpdate
// with the fields set one by one, keep its annotation, with
// no write; CreateOrUpdate with the spec built whole removes it, and says
// so, naming kubectl's field manager.
func TestRealRolloutRestartIsKept(t *testing.T) {
	env.Require(t)
	restart := func(t *testing.T, ns string) {
		t.Helper()
		stdout, stderr, err := env.Envtest.ControlPlane.KubeCtl().Run("rollout", "restart", "deployment/web", "-n", ns)
		if err != nil {
			out, _ := io.ReadAll(stdout)
			errOut, _ := io.ReadAll(stderr)
			t.Fatalf("kubectl rollout restart: %v: %s %s", err, out, errOut)
		}
	}
	annotation := func(t *testing.T, ns string) string {
		t.Helper()
		d := &appsv1.Deployment{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, d); err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"]
	}
	byField := func(d *appsv1.Deployment) ownership.MutateFn {
		return func() error {
			if d.CreationTimestamp.IsZero() {
				return deployment(d, "nginx:1")() // the first time, whole
			}
			for i := range d.Spec.Template.Spec.Containers {
				d.Spec.Template.Spec.Containers[i].Image = "nginx:1"
			}
			return nil
		}
	}
	for _, tc := range []struct {
		name string
		call func(ctx context.Context, c client.Client, o client.Object, ns string) (controllerutil.OperationResult, error)
		kept bool
	}{
		{"Apply", func(ctx context.Context, c client.Client, o client.Object, ns string) (controllerutil.OperationResult, error) {
			return ownership.Apply(ctx, c, o, web(ns, "nginx:1"), "steady-test")
		}, true},
		{"CreateOrUpdate field by field", func(ctx context.Context, c client.Client, o client.Object, ns string) (controllerutil.OperationResult, error) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
			return ownership.CreateOrUpdate(ctx, c, o, d, byField(d))
		}, true},
		{"CreateOrUpdate whole", func(ctx context.Context, c client.Client, o client.Object, ns string) (controllerutil.OperationResult, error) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
			return ownership.CreateOrUpdate(ctx, c, o, d, deployment(d, "nginx:1"))
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, logged := loggedContext()
			ns := env.Namespace(t)
			o := owner(t, ns, "o")
			c, n := counting(t)
			if _, err := tc.call(ctx, c, o, ns); err != nil {
				t.Fatal(err)
			}
			restart(t, ns)
			restartedAt := annotation(t, ns)
			if restartedAt == "" {
				t.Fatal("kubectl rollout restart set no annotation")
			}
			n.Reset()
			op, err := tc.call(ctx, c, o, ns)
			if err != nil {
				t.Fatal(err)
			}
			got := annotation(t, ns)
			lines := logged()
			if tc.kept {
				if got != restartedAt || op != controllerutil.OperationResultNone || n.Writes() != 0 {
					t.Errorf("after the restart: %s with %d writes (%s), annotation %q; want it kept (%q), unchanged, no write", op, n.Writes(), n, got, restartedAt)
				}
				if lines != "" {
					t.Errorf("logged %q; want nothing", lines)
				}
				return
			}
			if got != "" {
				t.Errorf("the whole spec kept the annotation %q; this case is the one that removes it", got)
			}
			if !strings.Contains(lines, "restartedAt] (kubectl-rollout)") {
				t.Errorf("the removal of kubectl's annotation was not logged with its manager: %q", lines)
			}
		})
	}
}

package ownership_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/ownership"
)

// TestCreateOrPatchKeepsAnotherWritersListEntries: a merge patch replaces a
// list whole, so a patch of a list made from a stale read (a lagging
// cache) would drop what another writer added to it since (an env var of
// the container whose image mutate changes): such a patch is locked on the
// resourceVersion read, and is a conflict to requeue on, never a loss.
func TestCreateOrPatchKeepsAnotherWritersListEntries(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	a := owner(t, ns, "a")
	cc := startCached(t)
	key := client.ObjectKey{Namespace: ns, Name: "web"}
	image := func(d *appsv1.Deployment, img string) ownership.MutateFn {
		return func() error {
			if len(d.Spec.Template.Spec.Containers) == 0 {
				return deployment(d, img)()
			}
			d.Spec.Template.Spec.Containers[0].Image = img // only the image is ours
			return nil
		}
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}}
	if op, err := ownership.CreateOrPatch(ctx, cc.Client, a, d, image(d, "web:1")); err != nil || op != controllerutil.OperationResultCreated {
		t.Fatalf("create: %s, %v", op, err)
	}
	cachedSees(t, cc, d)

	// Another writer adds an env var to the container; the cache has not
	// seen it when CreateOrPatch changes the image.
	var other appsv1.Deployment
	if err := env.Client.Get(ctx, key, &other); err != nil {
		t.Fatal(err)
	}
	other.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "THEIRS", Value: "1"}}
	if err := env.Client.Update(ctx, &other); err != nil {
		t.Fatal(err)
	}
	d = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}}
	op, err := ownership.CreateOrPatch(ctx, cc.Client, a, d, image(d, "web:2"))
	t.Logf("stale patch: %s, %v", op, err)

	var got appsv1.Deployment
	if err := env.Client.Get(ctx, key, &got); err != nil {
		t.Fatal(err)
	}
	if env := got.Spec.Template.Spec.Containers[0].Env; len(env) != 1 || env[0].Name != "THEIRS" {
		t.Errorf("another writer's env var was lost: env %v, image %s (result %s, %v)", env, got.Spec.Template.Spec.Containers[0].Image, op, err)
	}
	if err != nil && !apierrors.IsConflict(err) {
		t.Errorf("a stale list patch: %v; want a conflict", err)
	}
	if err == nil && op != controllerutil.OperationResultUpdated {
		t.Errorf("result %s; want updated", op)
	}
}

package ownership_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/scope"
	"github.com/steadyk8s/steady/ownership"
)

// TestAppliedChildIsJudgedFromItself: Apply of a configuration the child
// already holds, with this field manager owning exactly its fields, sends
// nothing, judged from the child as read, not from memory: after a status
// change by the child's own controller, after another field manager's
// change of its own fields, and in a new process (a client with nothing
// remembered). A changed value, and a field the configuration no longer
// sets (which the apply releases, and so removes), are applied. A read
// older than this client's own last answer (a cache behind its write) is
// not trusted: the apply is sent.
func TestAppliedChildIsJudgedFromItself(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "o")
	withTier := func(image string) *appsv1ac.DeploymentApplyConfiguration {
		return web(ns, image).WithLabels(map[string]string{"tier": "front"})
	}
	c, n := counting(t)
	apply := func(what string, c client.Client, config *appsv1ac.DeploymentApplyConfiguration, want controllerutil.OperationResult, writes int) {
		t.Helper()
		n.Reset()
		op, err := ownership.Apply(ctx, c, o, config, "steady-test")
		if err != nil || op != want || n.Writes() != writes {
			t.Fatalf("%s: %s, %v with %d writes (%s); want %s with %d", what, op, err, n.Writes(), n, want, writes)
		}
	}
	apply("create", c, withTier("nginx:1"), controllerutil.OperationResultCreated, 1)
	live := &appsv1.Deployment{}
	key := client.ObjectKey{Namespace: ns, Name: "web"}
	get := func() *appsv1.Deployment {
		t.Helper()
		if err := env.Client.Get(ctx, key, live); err != nil {
			t.Fatal(err)
		}
		return live
	}

	// The deployment controller's status write.
	d := get()
	d.Status.ObservedGeneration = d.Generation
	d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: "True", Reason: "Test"}}
	if err := env.Client.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	apply("after a status change", c, withTier("nginx:1"), controllerutil.OperationResultNone, 0)

	// Another field manager's fields: a label and the replica count.
	other := appsv1ac.Deployment("web", ns).WithLabels(map[string]string{"team": "a"}).WithSpec(appsv1ac.DeploymentSpec().WithReplicas(3))
	if err := env.Client.Apply(ctx, other, client.FieldOwner("other")); err != nil {
		t.Fatal(err)
	}
	apply("after another field manager's change", c, withTier("nginx:1"), controllerutil.OperationResultNone, 0)

	restarted, rn := counting(t)
	n = rn
	apply("in a new process", restarted, withTier("nginx:1"), controllerutil.OperationResultNone, 0)

	apply("a new image", restarted, withTier("nginx:2"), controllerutil.OperationResultUpdated, 1)
	apply("the tier label no longer set", restarted, web(ns, "nginx:2"), controllerutil.OperationResultUpdated, 1)
	if d := get(); d.Labels["tier"] != "" || d.Labels["team"] != "a" || *d.Spec.Replicas != 3 {
		t.Fatalf("after the release: labels %v, replicas %d; want tier removed, the other manager's label and replicas kept", d.Labels, *d.Spec.Replicas)
	}
	apply("converged again", restarted, web(ns, "nginx:2"), controllerutil.OperationResultNone, 0)

	// A client whose reads show the child as it was before its own last
	// apply: the image is back at nginx:1 there, as the configuration asks.
	before := get().DeepCopy()
	apply("nginx:3", restarted, web(ns, "nginx:3"), controllerutil.OperationResultUpdated, 1)
	before.Spec.Template.Spec.Containers[0].Image = "nginx:1"
	// The same cluster as restarted's (its REST mapper), as a manager's
	// cache and client are.
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme, Mapper: restarted.RESTMapper()})
	if err != nil {
		t.Fatal(err)
	}
	behind := scope.Wrap(interceptor.NewClient(wc, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, into client.Object, opts ...client.GetOption) error {
			if d, ok := into.(*appsv1.Deployment); ok && k == key {
				before.DeepCopyInto(d)
				return nil
			}
			return c.Get(ctx, k, into, opts...)
		},
	}), scope.Held(restarted))
	n.Reset()
	if op, err := ownership.Apply(ctx, behind, o, web(ns, "nginx:1"), "steady-test"); err != nil || op != controllerutil.OperationResultUpdated {
		t.Fatalf("nginx:1 through a read behind the client's own answer: %s, %v (%s); want updated (sent)", op, err, n)
	}
	if d := get(); d.Spec.Template.Spec.Containers[0].Image != "nginx:1" {
		t.Fatalf("image %s, want nginx:1: the apply was skipped on a read older than the client's own write", d.Spec.Template.Spec.Containers[0].Image)
	}
}

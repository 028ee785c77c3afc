package ownership_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/ownership"
)

// TestAnotherWritersChangeOfAPriorityClassIsRepaired: docs/ownership.md
// (Cost) says the remembered verdict "only defaults differ" holds while
// the child keeps its resourceVersion, "or keeps that generation (which
// the API server bumps on any change but to metadata and a status
// subresource)", and that "a change of the child's spec or metadata ...
// asks the API server again". A PriorityClass has a generation (1) that
// its API never bumps: kubectl edit of its description leaves the
// generation and the metadata as they were. CreateOrUpdate, which owns
// the child whole, must see the change and put its description back.
func TestAnotherWritersChangeOfAPriorityClassIsRepaired(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c := remembering()
	// A cluster-scoped owner for a cluster-scoped child.
	o := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: env.Namespace(t)}}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
		t.Fatal(err)
	}
	name := o.Name + "-pc"
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	call := func() (controllerutil.OperationResult, *schedulingv1.PriorityClass) {
		t.Helper()
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
		op, err := ownership.CreateOrUpdate(ctx, c, o, pc, func() error {
			pc.Value = 1000 // wholesale: the server defaults preemptionPolicy
			pc.Description = "ours"
			pc.PreemptionPolicy = nil
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return op, pc
	}
	if op, pc := call(); op != controllerutil.OperationResultCreated || pc.Generation != 1 {
		t.Fatalf("create: %s, generation %d", op, pc.Generation)
	}
	if op, _ := call(); op != controllerutil.OperationResultNone {
		t.Fatalf("converged: %s", op)
	}

	// kubectl edit.
	live := &schedulingv1.PriorityClass{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, live); err != nil {
		t.Fatal(err)
	}
	live.Description = "theirs"
	if err := env.Client.Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	if live.Generation != 1 {
		t.Fatalf("the edit bumped the generation to %d: the case does not arise", live.Generation)
	}

	op, _ := call()
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, live); err != nil {
		t.Fatal(err)
	}
	if op != controllerutil.OperationResultUpdated || live.Description != "ours" {
		t.Errorf("after another writer changed the description: %s, description %q; want updated, %q", op, live.Description, "ours")
	}
}

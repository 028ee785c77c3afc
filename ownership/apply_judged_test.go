package ownership_test

import (
	"context"
	"errors"
	"fmt"
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

// ordered is web with init containers of these names, in this order.
func ordered(ns string, inits ...string) *appsv1ac.DeploymentApplyConfiguration {
	labels := map[string]string{"app": "web"}
	ps := corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("web").WithImage("nginx:1"))
	for _, n := range inits {
		ps.WithInitContainers(corev1ac.Container().WithName(n).WithImage("busybox"))
	}
	return appsv1ac.Deployment("web", ns).WithSpec(appsv1ac.DeploymentSpec().
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
		WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).WithSpec(ps)))
}

// TestAppliedListInAnotherOrderIsApplied: init containers run in list order; a
// configuration that swaps them must reorder the child, as server-side
// apply does.
func TestAppliedListInAnotherOrderIsApplied(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "o")
	c, n := counting(t)
	if op, err := ownership.Apply(ctx, c, o, ordered(ns, "migrate", "warm"), "steady-test"); err != nil || op != controllerutil.OperationResultCreated {
		t.Fatalf("create: %s, %v", op, err)
	}
	names := func() []string {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range d.Spec.Template.Spec.InitContainers {
			out = append(out, c.Name)
		}
		return out
	}
	restarted, rn := counting(t)
	n = rn
	n.Reset()
	op, err := ownership.Apply(ctx, restarted, o, ordered(ns, "warm", "migrate"), "steady-test")
	t.Logf("swapped through ownership.Apply: %s, %v, %d writes; init containers now %v", op, err, n.Writes(), names())
	// The same through a plain server-side apply.
	plain := ordered(ns, "warm", "migrate")
	if err := env.Client.Apply(ctx, plain, client.FieldOwner("steady-test")); err != nil {
		t.Fatal(err)
	}
	t.Logf("after a plain server-side apply of the same: %v", names())
	if op != controllerutil.OperationResultUpdated {
		t.Errorf("ownership.Apply of reordered init containers: %s; want updated", op)
	}
}

// TestAppliedChildWithAnotherOwnersRecordIsApplied: a controlled child on
// which another writer recorded another owner (the annotation). With
// RecordOwner, Apply replaces that record with its own, by a patch before
// the apply, and the child is taken back once a restore strips its
// controller reference. Without it the record is another writer's, not
// the apply's to remove: Apply changes nothing, and once the reference is
// lost the record refuses the child (Adopt{} takes it).
func TestAppliedChildWithAnotherOwnersRecordIsApplied(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	c, n := counting(t)
	for _, record := range []bool{true, false} {
		t.Run(fmt.Sprintf("RecordOwner=%t", record), func(t *testing.T) {
			var opts []ownership.ApplyOption
			if record {
				opts = append(opts, ownership.RecordOwner{})
			}
			o := owner(t, ns, fmt.Sprintf("o-%t", record))
			web := func() *appsv1ac.DeploymentApplyConfiguration {
				d := web(ns, "nginx:1")
				d.WithName(fmt.Sprintf("web-%t", record))
				return d
			}
			if op, err := ownership.Apply(ctx, c, o, web(), "steady-test", opts...); err != nil || op != controllerutil.OperationResultCreated {
				t.Fatalf("create: %s, %v", op, err)
			}
			key := client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("web-%t", record)}
			patch := func(p string) {
				d := &appsv1.Deployment{}
				d.Namespace, d.Name = key.Namespace, key.Name
				if err := env.Client.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(p)), client.FieldOwner("someone")); err != nil {
					t.Fatal(err)
				}
			}
			const annotation = "ownership.steady.dev/owner"
			intruder := "test.steady.dev/Widget/" + ns + "/intruder"
			patch(`{"metadata":{"annotations":{"` + annotation + `":"` + intruder + `"}}}`)
			n.Reset()
			op, err := ownership.Apply(ctx, c, o, web(), "steady-test", opts...)
			d := &appsv1.Deployment{}
			if err := env.Client.Get(ctx, key, d); err != nil {
				t.Fatal(err)
			}
			kept := d.Annotations[annotation] == intruder
			if err != nil || kept == record || (!record && (op != controllerutil.OperationResultNone || n.Writes() != 0)) {
				t.Errorf("apply: %s, %v (%s); annotations now %v; want the record replaced only with RecordOwner, no write without", op, err, n, d.Annotations)
			}
			// A restore strips the controller reference.
			patch(`{"metadata":{"ownerReferences":null}}`)
			_, err = ownership.Apply(ctx, c, o, web(), "steady-test", opts...)
			var aoe *ownership.AlreadyOwnedError
			if record && err != nil || !record && !errors.As(err, &aoe) {
				t.Errorf("after the reference is lost: %v; want it taken back with RecordOwner, refused by the intruder's record without", err)
			}
			if !record {
				if _, err := ownership.Apply(ctx, c, o, web(), "steady-test", ownership.Adopt{}); err != nil {
					t.Errorf("Adopt{} does not take it: %v", err)
				}
			}
		})
	}
}

// TestAppliedPortWithADefaultedKeyCostsNothing: a container port (a list keyed by
// containerPort and protocol, protocol defaulted) converged: a new process
// should send nothing.
func TestAppliedPortWithADefaultedKeyCostsNothing(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "o")
	withPort := func() *appsv1ac.DeploymentApplyConfiguration {
		d := web(ns, "nginx:1")
		d.Spec.Template.Spec.Containers[0].WithPorts(corev1ac.ContainerPort().WithContainerPort(8080))
		return d
	}
	c, _ := counting(t)
	if _, err := ownership.Apply(ctx, c, o, withPort(), "steady-test"); err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d)
	for _, f := range d.ManagedFields {
		t.Logf("%s %s %s", f.Manager, f.Operation, f.FieldsV1.Raw)
	}
	restarted, n := counting(t)
	op, err := ownership.Apply(ctx, restarted, o, withPort(), "steady-test")
	if err != nil || n.Writes() != 0 {
		t.Errorf("converged, in a new process: %s, %v, %d writes; want none", op, err, n.Writes())
	}
}

// TestAppliedSetInAnotherOrderIsApplied: finalizers (a set) applied in another
// order are reordered, as server-side apply does: updated.
func TestAppliedSetInAnotherOrderIsApplied(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "o")
	cm := func(fin ...string) *corev1ac.ConfigMapApplyConfiguration {
		return corev1ac.ConfigMap("cm", ns).WithFinalizers(fin...).WithData(map[string]string{"k": "v"})
	}
	c, _ := counting(t)
	if _, err := ownership.Apply(ctx, c, o, cm("example.com/a", "example.com/b"), "steady-test"); err != nil {
		t.Fatal(err)
	}
	restarted, n := counting(t)
	op, err := ownership.Apply(ctx, restarted, o, cm("example.com/b", "example.com/a"), "steady-test")
	got := &corev1.ConfigMap{}
	_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cm"}, got)
	t.Logf("swapped: %s, %v, %d writes; finalizers %v", op, err, n.Writes(), got.Finalizers)
	if err := env.Client.Apply(ctx, cm("example.com/b", "example.com/a"), client.FieldOwner("steady-test")); err != nil {
		t.Fatal(err)
	}
	_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cm"}, got)
	t.Logf("after a plain apply: finalizers %v", got.Finalizers)
	if op != controllerutil.OperationResultUpdated {
		t.Errorf("%s; want updated", op)
	}
	got.Finalizers = nil
	_ = env.Client.Update(ctx, got)
}

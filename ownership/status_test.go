package ownership_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
)

var gizmoGVK = schema.GroupVersionKind{Group: "test.steady.dev", Version: "v1", Kind: "Gizmo"}

func unstructuredChild(gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// TestAnotherWritersStatusSurvivesASpecChange: on a kind without a status
// subresource, the status another controller keeps survives a spec change
// of an unstructured child, through both calls, and the caller's object
// keeps it too.
func TestAnotherWritersStatusSurvivesASpecChange(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	for _, fn := range fns {
		t.Run(fn.name, func(t *testing.T) {
			size := int64(1)
			call := func() (*unstructured.Unstructured, controllerutil.OperationResult) {
				u := unstructuredChild(gizmoGVK, ns, "gizmo-"+strings.ToLower(fn.name))
				op, err := fn.fn(ctx, env.Client, o, u, func() error {
					return unstructured.SetNestedField(u.Object, size, "spec", "size")
				})
				if err != nil {
					t.Fatal(err)
				}
				return u, op
			}
			if _, op := call(); op != controllerutil.OperationResultCreated {
				t.Fatalf("first call: %s", op)
			}
			// Another controller keeps the status.
			other := unstructuredChild(gizmoGVK, ns, "gizmo-"+strings.ToLower(fn.name))
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(other), other); err != nil {
				t.Fatal(err)
			}
			_ = unstructured.SetNestedField(other.Object, "Running", "status", "phase")
			if err := env.Client.Update(ctx, other); err != nil {
				t.Fatal(err)
			}
			size = 2
			u, op := call()
			if op != controllerutil.OperationResultUpdated {
				t.Errorf("spec change: %s, want updated", op)
			}
			if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase != "Running" {
				t.Errorf("the caller's object lost the status: %v", u.Object["status"])
			}
			stored := unstructuredChild(gizmoGVK, ns, "gizmo-"+strings.ToLower(fn.name))
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(stored), stored); err != nil {
				t.Fatal(err)
			}
			phase, _, _ := unstructured.NestedString(stored.Object, "status", "phase")
			got, _, _ := unstructured.NestedInt64(stored.Object, "spec", "size")
			if phase != "Running" || got != 2 {
				t.Errorf("stored: status.phase %q, spec.size %d; want Running, 2", phase, got)
			}
		})
	}
}

// TestCreateOrPatchWritesAnUnstructuredChildsStatus, with and without a
// status subresource.
func TestCreateOrPatchWritesAnUnstructuredChildsStatus(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	for _, gvk := range []schema.GroupVersionKind{testapi.GroupVersion.WithKind("Widget"), gizmoGVK} {
		t.Run(gvk.Kind, func(t *testing.T) {
			for i, step := range []struct {
				phase string
				want  controllerutil.OperationResult
			}{{"Pending", "created"}, {"Pending", "unchanged"}, {"Running", "updatedStatusOnly"}, {"Running", "unchanged"}, {"", "updatedStatusOnly"}} {
				u := unstructuredChild(gvk, ns, "child")
				n.Reset()
				op, err := createOrPatch(ctx, c, o, u, func() error {
					if step.phase == "" {
						unstructured.RemoveNestedField(u.Object, "status", "phase")
						return nil
					}
					return unstructured.SetNestedField(u.Object, step.phase, "status", "phase")
				})
				if err != nil || op != step.want {
					t.Fatalf("call %d: %s, %v; want %s", i, op, err, step.want)
				}
				stored := unstructuredChild(gvk, ns, "child")
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(stored), stored); err != nil {
					t.Fatal(err)
				}
				if phase, _, _ := unstructured.NestedString(stored.Object, "status", "phase"); phase != step.phase {
					t.Errorf("call %d: stored status.phase %q, want %q", i, phase, step.phase)
				}
				if op == controllerutil.OperationResultNone && n.Writes() != 0 {
					t.Errorf("call %d: unchanged, but requests %s", i, n)
				}
			}
		})
	}
}

// TestCreateOrPatchKeepsTheStatusTheServerSetAtCreation: mutate sets no
// status, the API server sets a Pod's phase at creation; the status patch
// after the create must not remove it. And a status mutate does set lands
// on top of the server's.
func TestCreateOrPatchKeepsTheStatusTheServerSetAtCreation(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	if err := env.Client.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		message string // set by mutate; "" for none
	}{
		{"no status set", ""},
		{"a status field set", "scheduled by the test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: strings.ReplaceAll(tc.name, " ", "-")}}
			res, err := ownership.CreateOrPatch(ctx, env.Client, owner, pod, func() error {
				pod.Spec.Containers = []corev1.Container{{Name: "c", Image: "busybox"}}
				if tc.message != "" {
					pod.Status.Message = tc.message
				}
				return nil
			})
			if err != nil || res != controllerutil.OperationResultCreated {
				t.Fatalf("CreateOrPatch = %v, %v", res, err)
			}
			live := &corev1.Pod{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), live); err != nil {
				t.Fatal(err)
			}
			if live.Status.Phase != corev1.PodPending {
				t.Errorf("phase = %q: the status the API server set at creation was removed", live.Status.Phase)
			}
			if live.Status.Message != tc.message {
				t.Errorf("message = %q, want %q", live.Status.Message, tc.message)
			}
		})
	}
}

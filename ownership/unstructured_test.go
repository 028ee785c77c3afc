package ownership_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/ownership"
)

// TestUnstructuredChildWithGoInts: an unstructured child whose mutate
// writes plain Go ints (u.Object["spec"] = map[string]any{"size": 2}, as
// the JSON encoder and controllerutil accept) is written, not a panic.
func TestUnstructuredChildWithGoInts(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	apply := func(ctx context.Context, c client.Client, o, child client.Object, f ownership.MutateFn, _ ...option) (controllerutil.OperationResult, error) {
		if err := f(); err != nil {
			return controllerutil.OperationResultNone, err
		}
		return applyObject(ctx, c, o, child, "steady-test")
	}
	for _, fn := range append(fns, fnCase{"Apply", apply}) {
		t.Run(fn.name, func(t *testing.T) {
			name := "g-" + strings.ToLower(fn.name)
			for i, want := range []controllerutil.OperationResult{"created", "unchanged"} {
				u := unstructuredChild(gizmoGVK, ns, name)
				var op controllerutil.OperationResult
				var err error
				func() {
					defer func() {
						if r := recover(); r != nil {
							err = fmt.Errorf("panic: %v", r)
						}
					}()
					op, err = fn.fn(ctx, env.Client, o, u, func() error {
						u.Object["spec"] = map[string]any{"size": 2, "ratio": float32(0.5), "tags": []string{"a"}, "labels": map[string]string{"k": "v"}}
						return nil
					})
				}()
				if err != nil || op != want {
					t.Fatalf("call %d: %s, %v; want %s", i, op, err, want)
				}
			}
		})
	}
}

// TestAStatusThatIsNoObjectIsCompared: CreateOrUpdate of a child of a
// kind without a status subresource whose status is a string or a number
// (a schema that leaves the status free: Whatsit) writes a change of it
// with the object, and nothing when it is as stored.
func TestAStatusThatIsNoObjectIsCompared(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	gvk := schema.GroupVersionKind{Group: "test.steady.dev", Version: "v1", Kind: "Whatsit"}
	for i, step := range []struct {
		status any // nil: none
		want   controllerutil.OperationResult
	}{
		{"a", "created"}, {"a", "unchanged"}, {"b", "updated"}, {"b", "unchanged"},
		{int64(7), "updated"}, {int64(7), "unchanged"}, {int64(0), "updated"}, {nil, "updated"}, {nil, "unchanged"},
	} {
		n.Reset()
		u := unstructuredChild(gvk, ns, "w")
		op, err := ownership.CreateOrUpdate(ctx, c, o, u, func() error {
			u.Object["spec"] = map[string]any{"k": "v"}
			if step.status == nil {
				delete(u.Object, "status")
			} else {
				u.Object["status"] = step.status
			}
			return nil
		})
		if err != nil || op != step.want {
			t.Fatalf("step %d, status %v: %q, %v; want %s", i, step.status, op, err, step.want)
		}
		if writes := n.Writes(); (op == "unchanged") != (writes == 0) {
			t.Errorf("step %d, status %v: %q with requests %s", i, step.status, op, n)
		}
		got := unstructuredChild(gvk, ns, "w")
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(got), got); err != nil {
			t.Fatal(err)
		}
		if s, ok := got.Object["status"]; ok != (step.status != nil) || ok && s != step.status {
			t.Errorf("step %d: stored status %#v, want %#v", i, got.Object["status"], step.status)
		}
	}
}

package ownership_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

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

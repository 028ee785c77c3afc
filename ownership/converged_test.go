package ownership_test

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/ownership"
)

// applyFn is Apply as a createOr: mutate builds the child, then it is
// applied with the field manager steady-test, with opts (each an
// ApplyOption too: Adopt, RecordOwner).
func applyFn(ctx context.Context, c client.Client, o, child client.Object, f ownership.MutateFn, opts ...option) (controllerutil.OperationResult, error) {
	if err := f(); err != nil {
		return controllerutil.OperationResultNone, err
	}
	aopts := make([]ownership.ApplyOption, 0, len(opts))
	for _, opt := range opts {
		aopts = append(aopts, opt.(ownership.ApplyOption))
	}
	return applyObject(ctx, c, o, child, "steady-test", aopts...)
}

// allFns are the two ways to write a child: CreateOrUpdate and Apply.
var allFns = append(append([]fnCase{}, fns...), fnCase{"Apply", applyFn})

// TestAConvergedChildCostsNoRequest: through a manager's cached client, a
// child whose live copy differs from the desired one only by the API
// server's defaults (a wholesale Deployment spec) costs no request once it
// converged: no write for CreateOrUpdate (the verdict
// "only defaults differ" is remembered for the child's UID and
// resourceVersion and the desired state), no apply PATCH for Apply (its
// last answer is remembered). A change of the desired state, or of the
// child by another writer, is asked about again and written.
func TestAConvergedChildCostsNoRequest(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startCached(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	for _, fn := range allFns {
		t.Run(fn.name, func(t *testing.T) {
			name := "web-" + map[string]string{"CreateOrUpdate": "u", "Apply": "a"}[fn.name]
			call := func(image string) (controllerutil.OperationResult, string) {
				t.Helper()
				d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				cc.Counter.Reset()
				op, err := fn.fn(ctx, cc.Client, o, d, deployment(d, image))
				if err != nil {
					t.Fatalf("%s: %v", image, err)
				}
				return op, cc.Counter.String()
			}
			wait := func() {
				cachedSees(t, cc, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
			}
			if op, n := call("nginx:1"); op != controllerutil.OperationResultCreated {
				t.Fatalf("create: %s (%s)", op, n)
			}
			wait()
			call("nginx:1") // converges: one write the server finds nothing in, at most
			for i := 0; i < 10; i++ {
				if op, n := call("nginx:1"); op != controllerutil.OperationResultNone || n != "" {
					t.Errorf("converged call %d: %s, requests %q; want unchanged, none", i, op, n)
				}
			}
			if op, n := call("nginx:2"); op != controllerutil.OperationResultUpdated {
				t.Errorf("a new desired state: %s (%s), want updated", op, n)
			}
			wait()
			call("nginx:2")
			if op, n := call("nginx:2"); op != controllerutil.OperationResultNone || n != "" {
				t.Errorf("converged again: %s, requests %q", op, n)
			}
			// Another writer changes the child: the next call sees the new
			// resourceVersion and asks again. Our image, set back, is
			// written again (for Apply, whose field it would take over
			// without a conflict only by force, a label of theirs: sent
			// again, found unchanged).
			var d appsv1.Deployment
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
				t.Fatal(err)
			}
			want := controllerutil.OperationResultUpdated
			if fn.name == "Apply" {
				metav1.SetMetaDataLabel(&d.ObjectMeta, "theirs", "x") // beside the owner record
				want = controllerutil.OperationResultNone
			} else {
				d.Spec.Template.Spec.Containers[0].Image = "nginx:1"
			}
			if err := env.Client.Update(ctx, &d); err != nil {
				t.Fatal(err)
			}
			wait()
			if op, n := call("nginx:2"); op != want || n == "" {
				t.Errorf("after another writer's change: %s (requests %q), want %s after a request", op, n, want)
			}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
				t.Fatal(err)
			}
			if d.Spec.Template.Spec.Containers[0].Image != "nginx:2" {
				t.Errorf("stored image %s, want nginx:2", d.Spec.Template.Spec.Containers[0].Image)
			}
		})
	}
}

// TestConvergedCallsThroughACountingClient: the same on a direct client,
// whose GET is a request: a converged child costs that GET and nothing
// else, for each way to write it, typed and unstructured.
func TestConvergedCallsThroughACountingClient(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	seq := 0
	for _, fn := range allFns {
		for _, f := range forms {
			seq++
			name := fmt.Sprintf("web-%d", seq)
			t.Run(fn.name+"/"+f.name, func(t *testing.T) {
				for i := 0; i < 5; i++ {
					d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
					child, mutate := f.child(t, d, func(obj client.Object) { _ = deployment(obj.(*appsv1.Deployment), "nginx:1")() })
					n.Reset()
					op, err := fn.fn(ctx, c, o, child, mutate)
					if err != nil {
						t.Fatal(err)
					}
					if i >= 2 && (op != controllerutil.OperationResultNone || n.String() != "GET=1") {
						t.Errorf("call %d: %s, requests %s; want unchanged, GET=1", i, op, n)
					}
				}
			})
		}
	}
}

package ownership_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/ownership"
)

// createOnlyWebhook is a client whose creates of Deployments pass through
// what a mutating webhook registered for CREATE only does (a policy that
// rewrites the image on admission, say): the API server stores, and
// answers, an image the caller did not ask for. An update is not
// rewritten.
func createOnlyWebhook(t *testing.T) client.Client {
	t.Helper()
	return interceptor.NewClient(watchClient(t), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			d, ok := obj.(*appsv1.Deployment)
			if !ok {
				return c.Create(ctx, obj, opts...)
			}
			sent := d.DeepCopy() // the request as the webhook leaves it
			sent.Spec.Template.Spec.Containers[0].Image = "mirror.example/" + d.Spec.Template.Spec.Containers[0].Image
			if err := c.Create(ctx, sent, opts...); err != nil {
				return err
			}
			sent.DeepCopyInto(d) // the answer
			return nil
		},
	})
}

// The answer to a create is what was asked for and what the server filled
// in only where it keeps every value the caller set. A value changed at
// admission (a webhook for CREATE only) is a difference the next call
// sees and writes, as it would for any other writer's change: it is not
// taken for a default.
func TestAValueChangedAtCreateIsWrittenBack(t *testing.T) {
	env.Require(t)
	for _, tc := range fns {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := createOnlyWebhook(t)
			ns := env.Namespace(t)
			o := owner(t, ns, "app")
			call := func() controllerutil.OperationResult {
				t.Helper()
				d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
				op, err := tc.fn(ctx, c, o, d, deployment(d, "nginx:1"))
				if err != nil {
					t.Fatal(err)
				}
				return op
			}
			if op := call(); op != controllerutil.OperationResultCreated {
				t.Fatalf("first call: %s, want created", op)
			}
			live := &appsv1.Deployment{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, live); err != nil {
				t.Fatal(err)
			}
			if got := live.Spec.Template.Spec.Containers[0].Image; got != "mirror.example/nginx:1" {
				t.Fatalf("the webhook's image: %q", got)
			}
			op := call()
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, live); err != nil {
				t.Fatal(err)
			}
			if got := live.Spec.Template.Spec.Containers[0].Image; op != controllerutil.OperationResultUpdated || got != "nginx:1" {
				t.Fatalf("the call after the create: %s, image %q; want updated and nginx:1", op, got)
			}
		})
	}
}

// A custom resource with a status subresource, written unstructured, whose
// mutate sets a status (which CreateOrUpdate cannot write): the update
// that finds only that (and the schema's defaults) to differ stores
// nothing, and its verdict holds for later calls, as it did before the
// verdicts were summed without the status. Without a Go type and with no
// live status, the kind's subresource is not learned from the answer, so
// only the verdict keeps the calls from paying a write each.
func TestAStatusCreateOrUpdateCannotWriteCostsOneWrite(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "app")
	gvk := schema.GroupVersionKind{Group: "test.steady.dev", Version: "v1", Kind: "Doodad"}
	writes := 0
	for i := range 5 {
		n.Reset()
		u := unstructuredChild(gvk, ns, "d")
		if _, err := ownership.CreateOrUpdate(ctx, c, o, u, func() error {
			u.Object["spec"] = map[string]any{"color": "red"}
			u.Object["status"] = map[string]any{"phase": "Ready"}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			writes += n.Writes()
		}
	}
	if writes > 1 {
		t.Errorf("4 calls after the create: %d writes, want at most 1", writes)
	}
}

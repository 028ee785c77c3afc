package ownership_test

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// A converged child costs no request while its own controller writes its
// status, from the call right after its create on: the verdict that only
// the server's defaults differ holds until the child's generation or its
// labels, annotations, finalizers or owner references change. A change by
// another writer of the spec or of the metadata is seen and repaired.
func TestConvergedChildCostsNothingWhileItsStatusChanges(t *testing.T) {
	env.Require(t)
	for _, tc := range fns {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, n := counting(t)
			ns := env.Namespace(t)
			o := owner(t, ns, "app")
			call := func(want controllerutil.OperationResult, writes int, what string) {
				t.Helper()
				n.Reset()
				d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
				op, err := tc.fn(ctx, c, o, d, deployment(d, "nginx:1"))
				if err != nil || op != want || n.Writes() != writes {
					t.Fatalf("%s: %s, %v, requests %s; want %s and %d writes", what, op, err, n, want, writes)
				}
			}
			call(controllerutil.OperationResultCreated, 1, "create")
			call(controllerutil.OperationResultNone, 0, "the call after the create")

			// The deployment controller's status writes (none runs here:
			// the test writes what it would).
			key := client.ObjectKey{Namespace: ns, Name: "web"}
			for i := range 5 {
				live := &appsv1.Deployment{}
				if err := env.Client.Get(ctx, key, live); err != nil {
					t.Fatal(err)
				}
				live.Status.ObservedGeneration = live.Generation
				live.Status.Replicas = int32(i)
				live.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing,
					Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated", Message: fmt.Sprintf("step %d", i)}}
				if err := env.Client.Status().Update(ctx, live); err != nil {
					t.Fatal(err)
				}
				call(controllerutil.OperationResultNone, 0, fmt.Sprintf("after status write %d", i))
			}

			// Another writer's label (kubectl label): the verdict no longer
			// holds; the wholesale mutate keeps labels it does not set.
			live := &appsv1.Deployment{}
			if err := env.Client.Get(ctx, key, live); err != nil {
				t.Fatal(err)
			}
			if live.Labels == nil {
				live.Labels = map[string]string{}
			}
			live.Labels["team"] = "a"
			if err := env.Client.Update(ctx, live); err != nil {
				t.Fatal(err)
			}
			// The comparison finds only the server's defaults differing, which
			// a write that stores nothing learns again.
			call(controllerutil.OperationResultNone, 1, "after another writer's label")
			call(controllerutil.OperationResultNone, 0, "the call after that")

			// Another writer's spec change (kubectl scale): repaired.
			if err := env.Client.Get(ctx, key, live); err != nil {
				t.Fatal(err)
			}
			live.Spec.Replicas = new(int32(5))
			if err := env.Client.Update(ctx, live); err != nil {
				t.Fatal(err)
			}
			call(controllerutil.OperationResultUpdated, 1, "after another writer's scale")
			if err := env.Client.Get(ctx, key, live); err != nil {
				t.Fatal(err)
			}
			if *live.Spec.Replicas != 2 || live.Labels["team"] != "a" {
				t.Errorf("after the repair: replicas %d, labels %v; want 2 and team=a kept", *live.Spec.Replicas, live.Labels)
			}
		})
	}
}

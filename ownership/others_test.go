package ownership_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/steadyk8s/steady/ownership"
)

// loggedContext is a context whose logger keeps what it is given; logged
// returns the lines kept since its last call.
func loggedContext() (ctx context.Context, logged func() string) {
	var mu sync.Mutex
	var lines []string
	ctx = log.IntoContext(context.Background(), funcr.New(func(_, args string) {
		mu.Lock()
		lines = append(lines, args)
		mu.Unlock()
	}, funcr.Options{}))
	return ctx, func() string {
		mu.Lock()
		defer mu.Unlock()
		out := strings.Join(lines, "\n")
		lines = nil
		return out
	}
}

// TestWholeWriteOfASharedChildIsLogged: CreateOrUpdate of a child built
// whole, which removes what another field manager set (kubectl rollout
// restart's pod-template annotation), says so on the
// context's logger, naming the field and the manager; a replica count
// another manager set and the write sets again (a fight, but no removal)
// is not named; a mutate that sets fields one by one on the child as read
// keeps the annotation and logs nothing.
func TestWholeWriteOfASharedChildIsLogged(t *testing.T) {
	env.Require(t)
	for _, tc := range fns {
		t.Run(tc.name, func(t *testing.T) {
			ctx, logged := loggedContext()
			ns := env.Namespace(t)
			o := owner(t, ns, "o")
			c, _ := counting(t)
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
			if _, err := tc.fn(ctx, c, o, d, deployment(d, "nginx:1")); err != nil {
				t.Fatal(err)
			}
			if err := env.Client.Apply(ctx, appsv1ac.Deployment("web", ns).WithSpec(appsv1ac.DeploymentSpec().WithReplicas(5)),
				client.FieldOwner("autoscaler"), client.ForceOwnership); err != nil {
				t.Fatal(err)
			}
			restart := []byte(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"now"}}}}}`)
			if err := env.Client.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}},
				client.RawPatch(types.StrategicMergePatchType, restart), client.FieldOwner("kubectl-rollout")); err != nil {
				t.Fatal(err)
			}
			logged()

			d = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
			if _, err := tc.fn(ctx, c, o, d, deployment(d, "nginx:1")); err != nil {
				t.Fatal(err)
			}
			got := logged()
			want := "spec.template.metadata.annotations[kubectl.kubernetes.io/restartedAt] (kubectl-rollout)"
			if !strings.Contains(got, want) || !strings.Contains(got, "ownership.Apply") {
				t.Errorf("a whole write that removes rollout restart's annotation logged %q; want it to name %s and say what keeps it", got, want)
			}
			if strings.Contains(got, "replicas") {
				t.Errorf("logged %q: the replica count is set again, not removed", got)
			}

			// Put the annotation back, and set fields one by one.
			if err := env.Client.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}},
				client.RawPatch(types.StrategicMergePatchType, restart), client.FieldOwner("kubectl-rollout")); err != nil {
				t.Fatal(err)
			}
			d = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
			byField := func() error {
				for i := range d.Spec.Template.Spec.Containers {
					d.Spec.Template.Spec.Containers[i].Image = "nginx:2"
				}
				return nil
			}
			if _, err := tc.fn(ctx, c, o, d, ownership.MutateFn(byField)); err != nil {
				t.Fatal(err)
			}
			if got := logged(); got != "" {
				t.Errorf("a mutate that removes nothing of others logged %q", got)
			}
			live := &appsv1.Deployment{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(d), live); err != nil {
				t.Fatal(err)
			}
			if live.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] != "now" || live.Spec.Template.Spec.Containers[0].Image != "nginx:2" {
				t.Errorf("field by field: annotations %v, image %s", live.Spec.Template.Annotations, live.Spec.Template.Spec.Containers[0].Image)
			}
		})
	}
}

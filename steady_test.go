package steady_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/scope"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/testenv"
)

var env = testapi.NewEnv()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// web is a Deployment built wholesale, as operators build children: the
// API server fills in defaults the desired object does not have, so only
// a remembered verdict spares the write that would store nothing.
func web(d *appsv1.Deployment) controllerutil.MutateFn {
	return func() error {
		labels := map[string]string{"app": d.Name}
		d.Spec = appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1"}}},
			},
		}
		return nil
	}
}

// TestTwoManagersShareNothing: two managers of one cluster in one process,
// each with its steady client. What one remembers (its verdict on a child
// it wrote) spares it a write and does not spare the other one: each
// remembers apart, as two processes would. What each remembers ends with
// what its own informer shows: the child deleted, both forget it.
func TestTwoManagersShareNothing(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	a := testapi.StartManager(t, env, testapi.ManagerOptions{Informers: []client.Object{&appsv1.Deployment{}}})
	b := testapi.StartManager(t, env, testapi.ManagerOptions{Informers: []client.Object{&appsv1.Deployment{}}})
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	if err := env.Client.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	call := func(m *testapi.Cached) (controllerutil.OperationResult, int) {
		t.Helper()
		m.Counter.Reset()
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
		op, err := ownership.CreateOrUpdate(ctx, m.Client, owner, d, web(d))
		if err != nil {
			t.Fatal(err)
		}
		return op, m.Counter.Writes()
	}
	if op, _ := call(a); op != controllerutil.OperationResultCreated {
		t.Fatalf("a's first call: %s, want created", op)
	}
	testenv.Eventually(t, "b's cache shows the child", func() error {
		return b.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &appsv1.Deployment{})
	})
	testenv.Eventually(t, "a's cache shows the child", func() error {
		return a.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &appsv1.Deployment{})
	})
	// a remembers what its create's answer held: nothing to write.
	if op, writes := call(a); op != controllerutil.OperationResultNone || writes != 0 {
		t.Errorf("a again: %s, %d writes (%s); want unchanged, none (a.s verdict)", op, writes, a.Counter)
	}
	// b remembers nothing of a's create: one write the server stores
	// nothing of, then b's own verdict.
	if op, writes := call(b); op != controllerutil.OperationResultNone || writes != 1 {
		t.Errorf("b's first call: %s, %d writes; want unchanged, 1 (b shares nothing of a's memory)", op, writes)
	}
	if op, writes := call(b); op != controllerutil.OperationResultNone || writes != 0 {
		t.Errorf("b again: %s, %d writes; want unchanged, none", op, writes)
	}
	sa, sb := scope.Held(a.Client), scope.Held(b.Client)
	if sa == nil || sb == nil || sa == sb {
		t.Fatalf("the managers' States: %p, %p; want two", sa, sb)
	}
	if sa.Len() == 0 || sb.Len() == 0 {
		t.Fatalf("remembered: a %d, b %d objects; want the child in each", sa.Len(), sb.Len())
	}
	if err := env.Client.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "both forget the deleted child", func() error {
		if na, nb := sa.Len(), sb.Len(); na != 0 || nb != 0 {
			return fmt.Errorf("a remembers %d objects, b %d", na, nb)
		}
		return nil
	})
}

// TestMemoryFollowsTheInformer: a steady client remembers one entry per
// child it wrote, any number of them, and forgets each when its manager's
// informer shows the child deleted; the ledger's entries of its writes end
// when the informer shows them.
func TestMemoryFollowsTheInformer(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	m := testapi.StartManager(t, env, testapi.ManagerOptions{Informers: []client.Object{&corev1.ConfigMap{}}})
	s := scope.Held(m.Client)
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	if err := env.Client.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	const n = 40
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("child-", i)}}
		if _, err := ownership.CreateOrUpdate(ctx, m.Client, owner, cm, func() error {
			cm.Data = map[string]string{"i": fmt.Sprint(i)}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Len(); got < n {
		t.Fatalf("%d objects remembered after %d creates, want at least %d", got, n, n)
	}
	if err := env.Client.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "every deleted child forgotten", func() error {
		if got := s.Len(); got != 0 {
			return fmt.Errorf("%d objects still remembered", got)
		}
		return nil
	})
}

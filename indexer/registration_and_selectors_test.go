package indexer_test

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/steadyk8s/steady/indexer"
	"github.com/steadyk8s/steady/internal/testapi"
)

// TestConcurrentRegistrationOfTheSameIndex: controllers set up in parallel
// register the same declaration on one cache, half of them through
// ControllerOwner[T]() and half from an object (RegisterControllerOwner, as
// reconcile.Controller.Owns does); each registration succeeds (the same
// declaration is a no-op, never a conflict).
func TestConcurrentRegistrationOfTheSameIndex(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	for round := 0; round < 60; round++ {
		mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
		if err != nil {
			t.Fatal(err)
		}
		idx := indexer.ControllerOwner[*corev1.Secret]()
		var wg sync.WaitGroup
		errs := make([]error, 32)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i%2 == 0 {
					errs[i] = idx.Register(ctx, mgr.GetFieldIndexer())
				} else {
					errs[i] = indexer.RegisterControllerOwner(ctx, mgr.GetFieldIndexer(), &corev1.Secret{})
				}
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d, registration %d: %v", round, i, err)
			}
		}
	}
}

// WidgetsByColor indexes widgets by spec.color.
var WidgetsByColor = indexer.New("spec.color", func(w *testapi.Widget) []string { return []string{w.Spec.Color} })

// TestFieldSelectorsNarrowAnIndexedList: a client.MatchingFields passed to
// Find (an option, which the doc says narrows the result) is ANDed with the
// index, not put in its place: the result never holds objects without the
// index value.
func TestFieldSelectorsNarrowAnIndexedList(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c := startManager(t, func(mgr ctrl.Manager) error {
		if err := TenantsByNamespace.Register(ctx, mgr.GetFieldIndexer()); err != nil {
			return err
		}
		return WidgetsByColor.Register(ctx, mgr.GetFieldIndexer())
	})
	ns := env.Namespace(t)
	for _, w := range []struct {
		name, color string
		tenants     []string
	}{{"red-a", "red", []string{"narrow-a"}}, {"red-b", "red", []string{"narrow-b"}}, {"blue-a", "blue", []string{"narrow-a"}}} {
		obj := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: w.name}, Spec: testapi.WidgetSpec{Color: w.color}}
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		obj.Status.Namespaces = w.tenants
		if err := env.Client.Status().Update(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, []string{"blue-a", "red-a"}, func() ([]string, error) {
		got, err := TenantsByNamespace.Find(ctx, c, env.Scheme, "narrow-a", client.InNamespace(ns))
		return names(got), err
	})
	got, err := TenantsByNamespace.Find(ctx, c, env.Scheme, "narrow-a", client.InNamespace(ns), client.MatchingFields{"spec.color": "red"})
	if err != nil {
		t.Fatal(err)
	}
	if n := names(got); len(n) != 1 || n[0] != "red-a" {
		t.Errorf("tenants of narrow-a that are red: %v, want [red-a]", n)
	}
}

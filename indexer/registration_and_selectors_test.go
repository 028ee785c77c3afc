package indexer_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"weak"

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

// TestConcurrentRegistrationOfConflictingIndexes: two indexes of one name
// and type, each registered by many controllers in parallel on one cache:
// one of them wins, every registration of it succeeds, and every one of
// the other is a *ConflictError.
func TestConcurrentRegistrationOfConflictingIndexes(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	for round := 0; round < 30; round++ {
		mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
		if err != nil {
			t.Fatal(err)
		}
		idx := [2]*indexer.Index[*corev1.Secret]{
			indexer.New("test.contended", func(s *corev1.Secret) []string { return []string{s.Name} }),
			indexer.New("test.contended", func(s *corev1.Secret) []string { return []string{string(s.Type)} }),
		}
		var wg sync.WaitGroup
		errs := make([]error, 32)
		for i := range errs {
			wg.Go(func() { errs[i] = idx[i%2].Register(ctx, mgr.GetFieldIndexer()) })
		}
		wg.Wait()
		winner := 0
		if errs[0] != nil {
			winner = 1
		}
		for i, err := range errs {
			var ce *indexer.ConflictError
			if i%2 == winner && err != nil {
				t.Errorf("round %d: registration %d of the index registered: %v", round, i, err)
			} else if i%2 != winner && !errors.As(err, &ce) {
				t.Errorf("round %d: registration %d of the other index: %v, want *ConflictError", round, i, err)
			}
		}
	}
}

// valueIndexer is a field indexer that is not a pointer: it has no
// identity to remember it by.
type valueIndexer struct{ fi client.FieldIndexer }

func (v valueIndexer) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	return v.fi.IndexField(ctx, obj, field, extract)
}

// TestRegisteringOnAnIndexerWithoutIdentity: on a field indexer that is not
// a pointer, the same *Index registered again cannot be told from another
// index and is a *ConflictError, as Register's doc says; ControllerOwner's
// index, which needs no memory, is a no-op again.
func TestRegisteringOnAnIndexerWithoutIdentity(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	fi := valueIndexer{mgr.GetFieldIndexer()}
	for i := range 2 {
		if err := indexer.ControllerOwner[*corev1.Secret]().Register(ctx, fi); err != nil {
			t.Errorf("ControllerOwner, registration %d: %v", i, err)
		}
		if err := indexer.RegisterControllerOwner(ctx, fi, &corev1.Secret{}); err != nil {
			t.Errorf("RegisterControllerOwner, registration %d: %v", i, err)
		}
	}
	if err := WidgetsByColor.Register(ctx, fi); err != nil {
		t.Fatal(err)
	}
	var ce *indexer.ConflictError
	if err := WidgetsByColor.Register(ctx, fi); !errors.As(err, &ce) {
		t.Errorf("the same *Index again: %v, want *ConflictError", err)
	}
}

// countingIndexer counts the fields it is asked to index.
type countingIndexer struct{ n int }

func (c *countingIndexer) IndexField(context.Context, client.Object, string, client.IndexerFunc) error {
	c.n++
	return nil
}

// TestAnIndexForgetsCollectedIndexers: an *Index registered on a field
// indexer asks it once, asks another anew, and does not keep either alive.
func TestAnIndexForgetsCollectedIndexers(t *testing.T) {
	ctx := context.Background()
	idx := indexer.New("test.forgotten", func(*corev1.Secret) []string { return nil })
	defer runtime.KeepAlive(idx) // what remembers the indexers lives on
	first, second := &countingIndexer{}, &countingIndexer{}
	for _, fi := range []*countingIndexer{first, first, second} {
		if err := idx.Register(ctx, fi); err != nil {
			t.Fatal(err)
		}
	}
	if first.n != 1 || second.n != 1 {
		t.Errorf("indexers asked %d and %d times, want once each", first.n, second.n)
	}
	gone := weak.Make(first)
	first = nil
	for range 5 {
		runtime.GC()
		if gone.Value() == nil {
			return
		}
	}
	t.Error("an indexer dropped by its caller is still held by the *Index")
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

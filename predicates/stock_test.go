package predicates_test

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/predicates"
)

var env = testapi.NewEnv()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// TestWhatTheStockPredicateMisses, against a real API server, with the
// events a watch delivers: the start of a deletion bumps the generation of
// an object that has one (so the stock GenerationChangedPredicate passes
// it), while a change of the finalizers alone, or of labels alone, does
// not. The stock predicate drops the finalizer change (another
// controller's finalizer removed: the one a cleanup may wait for);
// GenerationChanged passes it, and, like the stock one, drops the label
// change.
func TestWhatTheStockPredicateMisses(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w", Finalizers: []string{"test.steady.dev/ours", "test.steady.dev/theirs"}}}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	next := watchModified(t, ctx, &testapi.WidgetList{}, ns, "w")
	patch := func(p string) {
		t.Helper()
		if err := env.Client.Patch(ctx, &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}, client.RawPatch(types.MergePatchType, []byte(p))); err != nil {
			t.Fatal(err)
		}
	}
	old := w
	for _, step := range []struct {
		what             string
		do               func()
		genBumped        bool
		stock, generated bool
	}{
		{"a label", func() { patch(`{"metadata":{"labels":{"team":"x"}}}`) }, false, false, false},
		{"another controller's finalizer removed", func() {
			patch(`{"metadata":{"finalizers":["test.steady.dev/ours"]}}`)
		}, false, false, true},
		{"the deletion started", func() {
			if err := env.Client.Delete(ctx, &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}); err != nil {
				t.Fatal(err)
			}
		}, true, true, true},
	} {
		step.do()
		cur := next(step.what).(*testapi.Widget)
		ue := event.UpdateEvent{ObjectOld: old, ObjectNew: cur}
		if bumped := cur.Generation != old.Generation; bumped != step.genBumped {
			t.Errorf("%s: generation %d -> %d; want bumped %v", step.what, old.Generation, cur.Generation, step.genBumped)
		}
		if got := (predicate.GenerationChangedPredicate{}).Update(ue); got != step.stock {
			t.Errorf("%s: the stock predicate passes it %v, want %v", step.what, got, step.stock)
		}
		if got := predicates.GenerationChanged().Update(ue); got != step.generated {
			t.Errorf("%s: GenerationChanged passes it %v, want %v", step.what, got, step.generated)
		}
		old = cur
	}
	patch(`{"metadata":{"finalizers":null}}`) // release it
}

// TestWhatTheStockPredicateMissesWithoutAGeneration, against a real API
// server: a ConfigMap has no metadata.generation (it stays 0), so the
// start of its deletion (a finalizer holds it) changes no generation, and
// the stock GenerationChangedPredicate drops that event; GenerationChanged
// passes it.
func TestWhatTheStockPredicateMissesWithoutAGeneration(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm", Finalizers: []string{"test.steady.dev/theirs"}}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	defer func() { // release it
		_ = env.Client.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}}, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	}()
	next := watchModified(t, ctx, &corev1.ConfigMapList{}, ns, "cm")
	if err := env.Client.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	cur := next("the deletion").(*corev1.ConfigMap)
	ue := event.UpdateEvent{ObjectOld: cm, ObjectNew: cur}
	if cur.DeletionTimestamp == nil || cur.Generation != 0 || cm.Generation != 0 {
		t.Fatalf("deletionTimestamp %v, generation %d -> %d; want a deletion started, no generation", cur.DeletionTimestamp, cm.Generation, cur.Generation)
	}
	if (predicate.GenerationChangedPredicate{}).Update(ue) {
		t.Error("the stock predicate passes the start of the deletion")
	}
	if !predicates.GenerationChanged().Update(ue) {
		t.Error("GenerationChanged drops the start of the deletion")
	}
}

// watchModified watches the object of list's kind named name in ns through
// a watch of its own, and returns a function that waits for the next
// MODIFIED event (what names the change, for the failure) and returns its
// object. The watch stops with the test.
func watchModified(t *testing.T, ctx context.Context, list client.ObjectList, ns, name string) func(what string) client.Object {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	watcher, err := wc.Watch(ctx, list, client.InNamespace(ns), client.MatchingFields{"metadata.name": name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(watcher.Stop)
	return func(what string) client.Object {
		t.Helper()
		for {
			select {
			case e := <-watcher.ResultChan():
				if e.Type == watch.Modified {
					return e.Object.(client.Object)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no watch event for %s", what)
			}
		}
	}
}

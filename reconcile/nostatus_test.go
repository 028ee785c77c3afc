package reconcile_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// Item 8: a kind without a status subresource: repeated no-op reconciles
// with WithObservedGeneration make no write, and the generation stays.
func TestObservedGenerationWithoutStatusSubresource(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	u := createU(t, newUnstructured("PlainThing", env.Namespace(t), "p"))
	c, n, _ := testapi.NewCountingClient(env.Config, env.Scheme)
	reconcileOnce := func() {
		obj := getU(t, u)
		p, _ := reconcile.NewPatcher(c, obj)
		_ = unstructured.SetNestedField(obj.Object, "Running", "status", "phase")
		if err := p.Patch(ctx, obj, reconcile.WithObservedGeneration{}); err != nil {
			t.Fatal(err)
		}
	}
	reconcileOnce()
	first := getU(t, u)
	og, _, _ := unstructured.NestedInt64(first.Object, "status", "observedGeneration")
	if og != first.GetGeneration() {
		t.Errorf("after the first write: generation %d, observedGeneration %d", first.GetGeneration(), og)
	}
	n.Reset()
	for range 5 {
		reconcileOnce()
	}
	last := getU(t, u)
	if n.Writes() != 0 || last.GetGeneration() != first.GetGeneration() {
		t.Errorf("5 no-op reconciles: requests %s, generation %d -> %d", n, first.GetGeneration(), last.GetGeneration())
	}
}

// TestStatusWithoutStatusSubresource patches an object whose CRD has a
// status field but no status subresource: status must not be dropped.
func TestStatusWithoutStatusSubresource(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "plainwidgets.test.steady.dev"},
		"spec": map[string]any{"group": "test.steady.dev", "scope": "Namespaced",
			"names": map[string]any{"kind": "PlainWidget", "plural": "plainwidgets", "singular": "plainwidget", "listKind": "PlainWidgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
	}}
	if err := env.Client.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("test.steady.dev/v1")
	obj.SetKind("PlainWidget")
	obj.SetNamespace(env.Namespace(t))
	obj.SetName("p")
	deadline := time.Now().Add(30 * time.Second)
	for err := env.Client.Create(ctx, obj.DeepCopy()); err != nil; err = env.Client.Create(ctx, obj.DeepCopy()) {
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	p, err := reconcile.NewPatcher(env.Client, obj)
	if err != nil {
		t.Fatal(err)
	}
	s, err := conditions.ForUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	conditions.MarkTrue(s, "Ready", "Ok", "")
	if err := unstructured.SetNestedField(obj.Object, "Running", "status", "phase"); err != nil {
		t.Fatal(err)
	}
	if err := p.Patch(ctx, obj); err != nil {
		t.Fatal(err)
	}
	got := obj.DeepCopy()
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
	gs, _ := conditions.ForUnstructured(got)
	if phase != "Running" || !conditions.IsTrue(gs, "Ready") {
		t.Errorf("status dropped: %v", got.Object["status"])
	}
}

// A kind without a status subresource, status and spec changed in one
// Patch with WithObservedGeneration: the status written with the object
// and then the spec written apart bump the generation twice, and the
// observedGeneration recorded is already behind when Patch returns.
func TestObservedGenerationWithSpecWithoutStatusSubresource(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	u := createU(t, newUnstructured("PlainThing", env.Namespace(t), "p"))
	c, n, _ := testapi.NewCountingClient(env.Config, env.Scheme)
	obj := getU(t, u)
	p, _ := reconcile.NewPatcher(c, obj)
	_ = unstructured.SetNestedField(obj.Object, int64(3), "spec", "replicas")
	_ = unstructured.SetNestedField(obj.Object, "Running", "status", "phase")
	if err := p.Patch(ctx, obj, reconcile.WithObservedGeneration{}); err != nil {
		t.Fatal(err)
	}
	got := getU(t, u)
	og, _, _ := unstructured.NestedInt64(got.Object, "status", "observedGeneration")
	r, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas")
	if og != got.GetGeneration() || r != 3 {
		t.Errorf("generation %d, observedGeneration %d, spec.replicas %d", got.GetGeneration(), og, r)
	}
	if n.Get("PATCH") > 2 || n.Get("GET") != 0 {
		t.Errorf("requests %s, want the status subresource's 404 and one PATCH", n)
	}
	// A label alone, observedGeneration current: no generation bump.
	n.Reset()
	obj = getU(t, u)
	p, _ = reconcile.NewPatcher(c, obj)
	obj.SetLabels(map[string]string{"team": "a"})
	_ = unstructured.SetNestedField(obj.Object, "Labelled", "status", "phase")
	if err := p.Patch(ctx, obj, reconcile.WithObservedGeneration{}); err != nil {
		t.Fatal(err)
	}
	got2 := getU(t, u)
	og2, _, _ := unstructured.NestedInt64(got2.Object, "status", "observedGeneration")
	if og2 != got2.GetGeneration() || got2.GetLabels()["team"] != "a" {
		t.Errorf("label and phase: generation %d -> %d, observedGeneration %d, labels %v", got.GetGeneration(), got2.GetGeneration(), og2, got2.GetLabels())
	}
	// And the next reconcile, with nothing to change, writes nothing.
	n.Reset()
	obj = getU(t, u)
	p, _ = reconcile.NewPatcher(c, obj)
	_ = unstructured.SetNestedField(obj.Object, "Labelled", "status", "phase")
	if err := p.Patch(ctx, obj, reconcile.WithObservedGeneration{}); err != nil {
		t.Fatal(err)
	}
	if n.Writes() != 0 {
		t.Errorf("a no-op reconcile after it: requests %s", n)
	}
}

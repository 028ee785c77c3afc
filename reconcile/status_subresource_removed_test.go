package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// A CRD's status subresource removed at runtime (a new release of the CRD
// without it): a status write of its kind through the same client had
// succeeded, so the kind is known to have one, and the next status write's
// 404 must not be taken for the object gone: the object is there, and its
// status must be written (with the object, as for any kind without the
// subresource), not lost with Patch answering nil.
func TestStatusIsWrittenAfterTheStatusSubresourceIsRemoved(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	subresources := func(on bool) map[string]any {
		v := map[string]any{"name": "v1", "served": true, "storage": true,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
		if on {
			v["subresources"] = map[string]any{"status": map[string]any{}}
		}
		return v
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "switchwidgets.test.steady.dev"},
		"spec": map[string]any{"group": "test.steady.dev", "scope": "Namespaced",
			"names":    map[string]any{"kind": "SwitchWidget", "plural": "switchwidgets", "singular": "switchwidget", "listKind": "SwitchWidgetList"},
			"versions": []any{subresources(true)}},
	}}
	if err := env.Client.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), crd) })
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("test.steady.dev/v1")
	obj.SetKind("SwitchWidget")
	obj.SetNamespace(ns)
	obj.SetName("w")
	deadline := time.Now().Add(30 * time.Second)
	for err := env.Client.Create(ctx, obj.DeepCopy()); err != nil; err = env.Client.Create(ctx, obj.DeepCopy()) {
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	direct, _, err := testapi.NewCountingClient(env.Config, env.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	c := testapi.Remembering(direct, env.Scheme)
	read := func() *unstructured.Unstructured {
		got := obj.DeepCopy()
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	write := func(phase string) {
		t.Helper()
		o := read()
		p, err := reconcile.NewPatcher(c, o)
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(o.Object, phase, "status", "phase")
		if err := p.Patch(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	write("One") // through the status subresource: the kind has one

	// The CRD loses its status subresource; wait until the API server
	// answers a status write of the existing object with a 404.
	live := crd.DeepCopy()
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(crd), live); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedSlice(live.Object, []any{subresources(false)}, "spec", "versions")
	if err := env.Client.Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		err := env.Client.Status().Patch(ctx, read(), client.RawPatch(types.MergePatchType, []byte(`{}`)))
		if apierrors.IsNotFound(err) {
			var st apierrors.APIStatus
			if errors.As(err, &st) {
				t.Logf("404 of the removed subresource: %+v", st.Status())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the status subresource is still served: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	write("Two")
	if phase, _, _ := unstructured.NestedString(read().Object, "status", "phase"); phase != "Two" {
		t.Errorf("status.phase %q after a Patch that answered nil; want Two (the object is there: its status was lost)", phase)
	}
}

package reconcile_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/reconcile"
)

// A typed object's map dropped whole (spec.topology = nil) that holds a
// field its Go type does hold but omits, a zero value under omitempty
// (class: "", as a manifest wrote it): the managedFields name the field and
// the typed view lacks it, which is no field the type lacks. The drop must
// still remove the map: here it is left live as {class: ""}, and every later
// reconcile reads a Topology that is not nil.
func TestDroppingATypedMapWithAZeroValueRemovesIt(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	u := newUnstructured("Thing", ns, "t")
	u.Object["spec"] = map[string]any{"topology": map[string]any{"class": "", "variables": []any{"a"}}, "replicas": int64(1)}
	createU(t, u)
	obj := &Thing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t"}}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	p, err := reconcile.NewPatcher(env.Client, obj)
	if err != nil {
		t.Fatal(err)
	}
	obj.Spec.Topology = nil
	if err := p.Patch(ctx, obj); err != nil {
		t.Fatal(err)
	}
	got := getU(t, u)
	if topo, found, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "topology"); found {
		t.Errorf("spec.topology %v after a Patch that dropped it; want it gone (class \"\" is a field of the Go type, read as its zero value)", topo)
	}
}

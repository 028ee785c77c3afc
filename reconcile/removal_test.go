package reconcile_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// TestUnstructuredWithGoValues: an unstructured object into which code
// wrote Go values (an int, a []string), as the JSON encoder takes them, is
// patched like any other; runtime.DeepCopyJSON would panic on them.
func TestUnstructuredWithGoValues(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(testapi.GroupVersion.WithKind("Widget"))
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), u); err != nil {
		t.Fatal(err)
	}
	u.Object["spec"] = map[string]any{"size": 7}
	p, err := reconcile.NewPatcher(env.Client, u)
	if err != nil {
		t.Fatal(err)
	}
	u.Object["spec"] = map[string]any{"size": 3}
	u.Object["status"] = map[string]any{"namespaces": []string{"a", "b"}}
	if err := p.Patch(ctx, u); err != nil {
		t.Fatal(err)
	}
	got := get(t, w)
	if got.Spec.Size != 3 || len(got.Status.Namespaces) != 2 {
		t.Errorf("stored %+v / %+v", got.Spec, got.Status)
	}
}

// Removal is a change, on typed and unstructured objects: each written.
func TestRemovalIsAChange(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	type tc struct {
		name   string
		set    func(th *Thing)
		remove func(th *Thing)
		check  func(th *Thing) bool
	}
	cases := []tc{
		{"label", func(th *Thing) { th.Labels = map[string]string{"a": "1", "b": "2"} }, func(th *Thing) { delete(th.Labels, "a") },
			func(th *Thing) bool { _, ok := th.Labels["a"]; return !ok && th.Labels["b"] == "2" }},
		{"annotation", func(th *Thing) { th.Annotations = map[string]string{"a": "1"} }, func(th *Thing) { th.Annotations = nil },
			func(th *Thing) bool { return len(th.Annotations) == 0 }},
		{"bool set false", func(th *Thing) { th.Spec.Paused = true }, func(th *Thing) { th.Spec.Paused = false },
			func(th *Thing) bool { return !th.Spec.Paused }},
		{"number set 0", func(th *Thing) { th.Spec.Replicas = 3 }, func(th *Thing) { th.Spec.Replicas = 0 },
			func(th *Thing) bool { return th.Spec.Replicas == 0 }},
		{"list emptied", func(th *Thing) { th.Spec.Tags = []string{"x"} }, func(th *Thing) { th.Spec.Tags = []string{} },
			func(th *Thing) bool { return len(th.Spec.Tags) == 0 }},
		{"map emptied", func(th *Thing) { th.Spec.Params = map[string]string{"k": "v"} }, func(th *Thing) { th.Spec.Params = nil },
			func(th *Thing) bool { return len(th.Spec.Params) == 0 }},
		{"status bool set false", func(th *Thing) { th.Status.Ready = true }, func(th *Thing) { th.Status.Ready = false },
			func(th *Thing) bool { return !th.Status.Ready }},
		{"condition removed", func(th *Thing) {
			th.Status.Conditions = []metav1.Condition{{Type: "A", Status: "True", Reason: "R", LastTransitionTime: metav1.Now()}, {Type: "B", Status: "True", Reason: "R", LastTransitionTime: metav1.Now()}}
		}, func(th *Thing) { th.Status.Conditions = th.Status.Conditions[1:] },
			func(th *Thing) bool { return len(th.Status.Conditions) == 1 && th.Status.Conditions[0].Type == "B" }},
		{"last condition removed", func(th *Thing) {
			th.Status.Conditions = []metav1.Condition{{Type: "A", Status: "True", Reason: "R", LastTransitionTime: metav1.Now()}}
		}, func(th *Thing) { th.Status.Conditions = nil },
			func(th *Thing) bool { return len(th.Status.Conditions) == 0 }},
		{"finalizer removed", func(th *Thing) { th.Finalizers = []string{"a.io/x"} }, func(th *Thing) { th.Finalizers = nil },
			func(th *Thing) bool { return len(th.Finalizers) == 0 }},
	}
	for _, typed := range []bool{true, false} {
		for _, c := range cases {
			name := c.name + "/unstructured"
			if typed {
				name = c.name + "/typed"
			}
			t.Run(name, func(t *testing.T) {
				ns := env.Namespace(t)
				createU(t, newUnstructured("Thing", ns, "t"))
				th := &Thing{}
				key := client.ObjectKey{Namespace: ns, Name: "t"}
				if err := env.Client.Get(ctx, key, th); err != nil {
					t.Fatal(err)
				}
				p, _ := reconcile.NewPatcher(env.Client, th)
				c.set(th)
				if err := p.Patch(ctx, th); err != nil {
					t.Fatal(err)
				}
				if typed {
					c.remove(th)
					if err := p.Patch(ctx, th); err != nil {
						t.Fatal(err)
					}
				} else {
					// The same removal, made on an unstructured copy.
					u := newUnstructured("Thing", ns, "t")
					if err := env.Client.Get(ctx, key, u); err != nil {
						t.Fatal(err)
					}
					pu, _ := reconcile.NewPatcher(env.Client, u)
					want := th.DeepCopyObject().(*Thing)
					c.remove(want)
					m, err := runtimeToMap(want)
					if err != nil {
						t.Fatal(err)
					}
					u.Object = m
					u.SetGroupVersionKind(thingGV.WithKind("Thing"))
					if err := pu.Patch(ctx, u); err != nil {
						t.Fatal(err)
					}
				}
				got := &Thing{}
				if err := env.Client.Get(ctx, key, got); err != nil {
					t.Fatal(err)
				}
				if !c.check(got) {
					t.Errorf("not removed: %s", mustJSON(got))
				}
			})
		}
	}
}

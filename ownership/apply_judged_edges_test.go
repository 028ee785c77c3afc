package ownership_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/ownership"
)

// sendsAlways reads children without managedFields: Apply cannot judge
// them from the read and sends the apply (the control: what the apply does).
func sendsAlways(t *testing.T) client.Client {
	return interceptor.NewClient(watchClient(t), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			obj.SetManagedFields(nil)
			return nil
		},
	})
}

func gizmoObj(ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := unstructuredChild(gizmoGVK, ns, name)
	if spec != nil {
		u.Object["spec"] = spec
	}
	return u
}

func mine(t *testing.T, obj client.Object) string {
	for _, f := range obj.GetManagedFields() {
		if f.Manager == "steady-test" && f.Operation == "Apply" {
			return string(f.FieldsV1.Raw)
		}
	}
	return ""
}

// TestAppliedMapWhoseFieldsAnotherTookIsApplied: a granular map entry whose
// children this manager lost (another manager force-applied them) is shown
// in the field set as a node with nothing under it, as an atomic map is.
// The configuration later agrees with the other manager's value: the apply
// owns it again (shared), so it is sent; skipped, the field would be removed
// from the child when the other manager lets go of it, although our
// configuration sets it.
func TestAppliedMapWhoseFieldsAnotherTookIsApplied(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "o")
	for _, tc := range []struct {
		name string
		c    func() client.Client
	}{{"judged", func() client.Client { c, _ := counting(t); return c }}, {"sent", func() client.Client { return sendsAlways(t) }}} {
		t.Run(tc.name, func(t *testing.T) {
			name := "g-" + tc.name
			feature := func(v bool) map[string]any {
				return map[string]any{"feature": map[string]any{"enabled": v}}
			}
			c, _ := counting(t)
			if _, err := ownership.Apply(ctx, c, o, client.ApplyConfigurationFromUnstructured(gizmoObj(ns, name, feature(true))), "steady-test"); err != nil {
				t.Fatal(err)
			}
			// Another manager takes spec.feature.enabled with force.
			if err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(gizmoObj(ns, name, feature(false))), client.FieldOwner("other"), client.ForceOwnership); err != nil {
				t.Fatal(err)
			}
			// Our configuration now agrees: enabled false.
			op, err := ownership.Apply(ctx, tc.c(), o, client.ApplyConfigurationFromUnstructured(gizmoObj(ns, name, feature(false))), "steady-test")
			live := gizmoObj(ns, name, nil)
			_ = env.Client.Get(ctx, client.ObjectKeyFromObject(live), live)
			t.Logf("our config agrees: %s, %v; steady-test owns %s", op, err, mine(t, live))
			// The other manager lets go of it.
			if err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(gizmoObj(ns, name, nil)), client.FieldOwner("other")); err != nil {
				t.Fatal(err)
			}
			_ = env.Client.Get(ctx, client.ObjectKeyFromObject(live), live)
			v, found, _ := unstructured.NestedBool(live.Object, "spec", "feature", "enabled")
			t.Logf("after the other manager let go: spec %v", live.Object["spec"])
			if !found || v {
				t.Errorf("spec.feature.enabled is %v (found %v); our configuration, applied, sets false", v, found)
			}
		})
	}
}

// TestAppliedChildRecreatedBehindOwnAnswerIsApplied: the child is deleted; Apply
// through a lagging cache creates it again (a new UID) with a new image;
// the cache still shows the old child, with the old image. Apply of the
// old image now: the child (the new one) has the new image, so the apply
// changes it. The read is older than the client's own last answer (of
// another UID): not trusted, the apply is sent, and the result is updated
// (not created: the child the answer showed was there).
func TestAppliedChildRecreatedBehindOwnAnswerIsApplied(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startCached(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "o")
	if _, err := ownership.Apply(ctx, cc.Client, o, web(ns, "nginx:1"), "steady-test"); err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	cachedSees(t, cc, d)
	if err := env.Client.Delete(ctx, d); err != nil {
		t.Fatal(err)
	}
	op, err := ownership.Apply(ctx, cc.Client, o, web(ns, "nginx:2"), "steady-test")
	t.Logf("nginx:2 after the delete: %s, %v", op, err)
	cc.Counter.Reset()
	op, err = ownership.Apply(ctx, cc.Client, o, web(ns, "nginx:1"), "steady-test")
	got := &appsv1.Deployment{}
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(d), got)
	t.Logf("nginx:1 again: %s, %v, %d writes; the child %s has %s", op, err, cc.Counter.Writes(), got.UID, got.Spec.Template.Spec.Containers[0].Image)
	if got.Spec.Template.Spec.Containers[0].Image != "nginx:1" || op != controllerutil.OperationResultUpdated {
		t.Errorf("Apply of nginx:1: %s, the child has %s", op, got.Spec.Template.Spec.Containers[0].Image)
	}
}

// TestAppliedEntryOfAnotherVersionIsApplied: the manager's applied entry is
// kept in the apiVersion it applied in. A configuration moved to a new
// version of the kind, the same fields: the apply rewrites the entry in the
// new version, so it is sent (skipped, the entry would stay in the old
// version, and once that version is gone from the CRD the API server could
// not read it: the apply of a configuration that no longer sets b would
// fail, and b stay).
func TestAppliedEntryOfAnotherVersionIsApplied(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "o")
	crd := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
	 "metadata":{"name":"gadgets.versioned.steady.dev"},
	 "spec":{"group":"versioned.steady.dev","scope":"Namespaced","names":{"kind":"Gadget","listKind":"GadgetList","plural":"gadgets","singular":"gadget"},
	  "versions":[
	   {"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}}}}},
	   {"name":"v2","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}}}}}]}}`), &crd.Object); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), crd) })
	gadget := func(v, name string, spec map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "versioned.steady.dev/" + v, "kind": "Gadget",
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}}
		return u
	}
	eventually := func(what string, f func() error) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			err := f()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v", what, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	ab := map[string]any{"a": "1", "b": "1"}
	cases := []struct {
		name string
		c    func() client.Client
	}{{"judged", func() client.Client { c, _ := counting(t); return c }}, {"sent", func() client.Client { return sendsAlways(t) }}}
	for _, tc := range cases {
		name := "x-" + tc.name
		eventually("apply v1", func() error {
			c, _ := counting(t)
			_, err := ownership.Apply(ctx, c, o, client.ApplyConfigurationFromUnstructured(gadget("v1", name, ab)), "steady-test")
			return err
		})
		var op controllerutil.OperationResult
		eventually("apply v2", func() error {
			var err error
			op, err = ownership.Apply(ctx, tc.c(), o, client.ApplyConfigurationFromUnstructured(gadget("v2", name, ab)), "steady-test")
			return err
		})
		live := gadget("v2", name, nil)
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(live), live)
		for _, f := range live.GetManagedFields() {
			if f.Manager == "steady-test" {
				t.Logf("%s: the configuration in v2: %s; steady-test's entry is in %s", tc.name, op, f.APIVersion)
			}
		}
	}
	// v1 leaves the CRD: storage v2, storedVersions [v2], v1 removed.
	key := client.ObjectKeyFromObject(crd)
	eventually("storage v2", func() error {
		if err := env.Client.Get(ctx, key, crd); err != nil {
			return err
		}
		vs, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		vs[0].(map[string]any)["storage"] = false
		vs[1].(map[string]any)["storage"] = true
		_ = unstructured.SetNestedSlice(crd.Object, vs, "spec", "versions")
		return env.Client.Update(ctx, crd)
	})
	time.Sleep(2 * time.Second)
	for _, tc := range cases {
		// A storage migration: rewritten in v2.
		live := gadget("v2", "x-"+tc.name, nil)
		eventually("migrate", func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(live), live); err != nil {
				return err
			}
			live.SetAnnotations(map[string]string{"migrated": "v2"})
			return env.Client.Update(ctx, live, client.FieldOwner("migrator"))
		})
	}
	eventually("storedVersions", func() error {
		if err := env.Client.Get(ctx, key, crd); err != nil {
			return err
		}
		_ = unstructured.SetNestedStringSlice(crd.Object, []string{"v2"}, "status", "storedVersions")
		return env.Client.Status().Update(ctx, crd)
	})
	eventually("v1 removed", func() error {
		if err := env.Client.Get(ctx, key, crd); err != nil {
			return err
		}
		vs, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		_ = unstructured.SetNestedSlice(crd.Object, vs[1:], "spec", "versions")
		return env.Client.Update(ctx, crd)
	})
	eventually("v1 gone", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(gadget("v1", "x-sent", nil)), gadget("v1", "x-sent", nil)); err == nil {
			return fmt.Errorf("v1 still served")
		}
		return nil
	})
	time.Sleep(2 * time.Second)
	for _, tc := range cases {
		name := "x-" + tc.name
		// The configuration no longer sets b.
		c, _ := counting(t)
		op, err := ownership.Apply(ctx, c, o, client.ApplyConfigurationFromUnstructured(gadget("v2", name, map[string]any{"a": "1"})), "steady-test")
		live := gadget("v2", name, nil)
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(live), live)
		t.Logf("%s: without b: %s, %v; spec %v", tc.name, op, err, live.Object["spec"])
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if _, has := live.Object["spec"].(map[string]any)["b"]; has {
			t.Errorf("%s: b stays after an apply of a configuration without it", tc.name)
		}
	}
}

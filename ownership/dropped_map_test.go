package ownership_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/ownership"
)

// mapCase is a child with a map that mutate drops whole, and another
// writer that adds a key to that map after our read.
type mapCase struct {
	name string
	// child returns a new child to pass.
	child func(ns string) client.Object
	// set puts our key in the map; drop removes the whole map.
	set, drop func(client.Object)
	// theirs adds another writer's key to the map of a child read from the
	// API server; status: the map is in the status.
	theirs func(client.Object)
	status bool
	// read returns the map of a child read from the API server.
	read func(client.Object) map[string]any
}

var mapCases = []mapCase{
	{name: "ConfigMap data (typed)",
		child: func(ns string) client.Object {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "typed"}}
		},
		set:    func(o client.Object) { o.(*corev1.ConfigMap).Data = map[string]string{"ours": "1"} },
		drop:   func(o client.Object) { o.(*corev1.ConfigMap).Data = nil },
		theirs: func(o client.Object) { o.(*corev1.ConfigMap).Data["theirs"] = "x" },
		read:   func(o client.Object) map[string]any { return stringMap(o.(*corev1.ConfigMap).Data) }},
	{name: "ConfigMap data (unstructured)",
		child: func(ns string) client.Object {
			return unstructuredChild(corev1.SchemeGroupVersion.WithKind("ConfigMap"), ns, "unstructured")
		},
		set:    func(o client.Object) { o.(*unstructured.Unstructured).Object["data"] = map[string]any{"ours": "1"} },
		drop:   func(o client.Object) { delete(o.(*unstructured.Unstructured).Object, "data") },
		theirs: func(o client.Object) { o.(*corev1.ConfigMap).Data["theirs"] = "x" },
		read:   func(o client.Object) map[string]any { return stringMap(o.(*corev1.ConfigMap).Data) }},
	{name: "custom resource spec map",
		child: func(ns string) client.Object { return unstructuredChild(gizmoGVK, ns, "spec") },
		set: func(o client.Object) {
			_ = unstructured.SetNestedMap(o.(*unstructured.Unstructured).Object, map[string]any{"ours": "1"}, "spec", "tags")
		},
		drop: func(o client.Object) {
			unstructured.RemoveNestedField(o.(*unstructured.Unstructured).Object, "spec", "tags")
		},
		theirs: func(o client.Object) {
			_ = unstructured.SetNestedField(o.(*unstructured.Unstructured).Object, "x", "spec", "tags", "theirs")
		},
		read: func(o client.Object) map[string]any {
			m, _, _ := unstructured.NestedMap(o.(*unstructured.Unstructured).Object, "spec", "tags")
			return m
		}},
	{name: "custom resource status map", status: true,
		child: func(ns string) client.Object { return unstructuredChild(gizmoGVK, ns, "status") },
		set: func(o client.Object) {
			_ = unstructured.SetNestedMap(o.(*unstructured.Unstructured).Object, map[string]any{"ours": "1"}, "status", "counts")
		},
		drop: func(o client.Object) {
			unstructured.RemoveNestedField(o.(*unstructured.Unstructured).Object, "status", "counts")
		},
		theirs: func(o client.Object) {
			_ = unstructured.SetNestedField(o.(*unstructured.Unstructured).Object, "x", "status", "counts", "theirs")
		},
		read: func(o client.Object) map[string]any {
			m, _, _ := unstructured.NestedMap(o.(*unstructured.Unstructured).Object, "status", "counts")
			return m
		}},
}

func stringMap(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// stored reads what the API server holds of a map case's child: typed
// ConfigMaps as typed, the rest unstructured.
func stored(t *testing.T, ns string, mc mapCase) map[string]any {
	t.Helper()
	obj := mc.child(ns)
	if u, ok := obj.(*unstructured.Unstructured); ok && u.GetKind() == "ConfigMap" {
		obj = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: u.GetName()}}
	}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	return mc.read(obj)
}

// TestDroppingAMapKeepsAnotherWritersKeys: CreateOrPatch with a mutate
// that drops a whole map (cm.Data = nil; a custom resource's map in spec or
// status) after another writer added a key to it since our read removes
// the keys we read, key by key, or is a conflict to requeue on (the write
// locked on the resourceVersion read); never the other writer's key. The
// other writer comes between our read and our write (deterministically),
// and through a manager's cached client held 300ms back, without an API
// reader. (With one, the conflict reads the child again and mutate runs
// on what it found: the keys read then include the other writer's, which
// the dropped map removes, as the reconcile after a requeue would.)
func TestDroppingAMapKeepsAnotherWritersKeys(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	o := owner(t, env.Namespace(t), "owner")
	typedCache, unstructuredCache := startCached(t), startCachedUnstructured(t)
	for _, mc := range mapCases {
		for _, how := range []string{"between the read and the write", "lagging cache"} {
			t.Run(mc.name+"/"+how, func(t *testing.T) {
				ns := env.Namespace(t)
				o := owner(t, ns, o.Name)
				child := mc.child(ns)
				if _, err := ownership.CreateOrPatch(ctx, remembering(), o, child, func() error { mc.set(child); return nil }); err != nil {
					t.Fatal(err)
				}
				other := func() {
					obj := mc.child(ns)
					if u, ok := obj.(*unstructured.Unstructured); ok && u.GetKind() == "ConfigMap" {
						obj = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: u.GetName()}}
					}
					if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
						t.Fatal(err)
					}
					mc.theirs(obj)
					if err := env.Client.Update(ctx, obj); err != nil {
						t.Fatal(err)
					}
				}
				var c client.Client
				switch how {
				case "lagging cache":
					cc := typedCache
					if _, ok := mc.child(ns).(*unstructured.Unstructured); ok {
						cc = unstructuredCache
					}
					c = cc.CacheOnly
					cachedSees(t, cc, mc.child(ns))
					other()
				default:
					proto := mc.child(ns)
					if u, ok := proto.(*unstructured.Unstructured); ok && u.GetKind() == "ConfigMap" {
						proto = &corev1.ConfigMap{}
					}
					c = staleAfterGet(t, proto, false, func(obj client.Object) { mc.theirs(obj) })
				}
				child = mc.child(ns)
				op, err := ownership.CreateOrPatch(ctx, c, o, child, func() error { mc.drop(child); return nil })
				got := stored(t, ns, mc)
				t.Logf("%s, %v; stored %v", op, err, got)
				if got["theirs"] != "x" {
					t.Errorf("the other writer's key is lost: stored %v (%s, %v)", got, op, err)
				}
				switch {
				case err == nil && (op == controllerutil.OperationResultNone || got["ours"] != nil):
					t.Errorf("%s, stored %v: our key was not removed", op, got)
				case err != nil && !apierrors.IsConflict(err):
					t.Errorf("failed with %v, want success or a conflict", err)
				}
			})
		}
	}
}

// TestDroppingAStructIsStillWritten: a field of struct type dropped whole
// (a Deployment's rollingUpdate when its strategy turns to Recreate, which
// the API server refuses to see even empty) is still removed as a whole:
// only maps are removed key by key.
func TestDroppingAStructIsStillWritten(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	for _, strategy := range []appsv1.DeploymentStrategy{
		{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: new(intstr.FromInt32(2))}},
		{Type: appsv1.RecreateDeploymentStrategyType},
	} {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
		mutate := deployment(d, "nginx:1")
		if _, err := ownership.CreateOrPatch(ctx, remembering(), o, d, func() error {
			_ = mutate()
			d.Spec.Strategy = strategy
			return nil
		}); err != nil {
			t.Fatalf("strategy %s: %v", strategy.Type, err)
		}
	}
	var got appsv1.Deployment
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || got.Spec.Strategy.RollingUpdate != nil {
		t.Errorf("stored strategy %+v", got.Spec.Strategy)
	}
}

package reconcile_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
	"github.com/steadyk8s/steady/testenv"
)

// kubectlApplies is another writer, as kubectl apply --server-side is
// (field manager kubectl): it adds a label, an annotation, a finalizer and
// a spec field to the Widget, and a condition to its status (kubectl apply
// --subresource=status).
func kubectlApplies(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	main := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.steady.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"namespace": ns, "name": name,
			"labels":      map[string]any{"their": "1"},
			"annotations": map[string]any{"their": "1"},
			"finalizers":  []any{"example.com/their"}},
		"spec": map[string]any{"owner": "their"},
	}}
	if err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(main), client.FieldOwner("kubectl")); err != nil {
		t.Fatal(err)
	}
	status := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.steady.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "TheirReady", "status": "True", "reason": "Their", "message": "theirs",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}},
	}}
	if err := env.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(status), client.FieldOwner("kubectl")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Patch(context.Background(), &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	})
}

// ourWidget creates the Widget as our controller left it: two labels of
// ours, our finalizer, two conditions of ours.
func ourWidget(t *testing.T, ns string) *testapi.Widget {
	t.Helper()
	ctx := context.Background()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w",
		Labels: map[string]string{"ours-1": "x", "ours-2": "x"}, Finalizers: []string{"steady.dev/ours"}},
		Spec: testapi.WidgetSpec{Size: 1}}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	w.Status.Conditions = []metav1.Condition{
		{Type: "OurReady", Status: metav1.ConditionTrue, Reason: "Ours", Message: "ours", LastTransitionTime: now},
		{Type: "OurStale", Status: metav1.ConditionFalse, Reason: "Ours", Message: "ours", LastTransitionTime: now},
	}
	if err := env.Client.Status().Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	return w
}

// dropOurs is our reconcile's change: it drops the label ours-1, the
// condition OurStale and our finalizer, and sets spec.size to 7, on a
// typed or an unstructured Widget.
func dropOurs(t *testing.T, obj client.Object) {
	t.Helper()
	labels := obj.GetLabels()
	delete(labels, "ours-1")
	obj.SetLabels(labels)
	obj.SetFinalizers(slices.DeleteFunc(obj.GetFinalizers(), func(f string) bool { return f == "steady.dev/ours" }))
	switch o := obj.(type) {
	case *testapi.Widget:
		o.Status.Conditions = slices.DeleteFunc(o.Status.Conditions, func(c metav1.Condition) bool { return c.Type == "OurStale" })
		o.Spec.Size = 7
	case *unstructured.Unstructured:
		conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		conds = slices.DeleteFunc(conds, func(c any) bool { return c.(map[string]any)["type"] == "OurStale" })
		if err := unstructured.SetNestedSlice(o.Object, conds, "status", "conditions"); err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedField(o.Object, int64(7), "spec", "size"); err != nil {
			t.Fatal(err)
		}
	}
}

// onlyOursRemoved checks the live Widget: ours gone, theirs and our other
// entries kept.
func onlyOursRemoved(t *testing.T, ns string) {
	t.Helper()
	w := get(t, &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}})
	var problems []string
	if w.Labels["their"] != "1" || w.Labels["ours-2"] != "x" || w.Labels["ours-1"] != "" {
		problems = append(problems, fmt.Sprintf("labels %v (want their and ours-2)", w.Labels))
	}
	if w.Annotations["their"] != "1" {
		problems = append(problems, fmt.Sprintf("annotations %v (want their)", w.Annotations))
	}
	if !slices.Equal(w.Finalizers, []string{"example.com/their"}) {
		problems = append(problems, fmt.Sprintf("finalizers %v (want example.com/their)", w.Finalizers))
	}
	var types []string
	for _, c := range w.Status.Conditions {
		types = append(types, c.Type)
	}
	slices.Sort(types)
	if !slices.Equal(types, []string{"OurReady", "TheirReady"}) {
		problems = append(problems, fmt.Sprintf("conditions %v (want OurReady and TheirReady)", types))
	}
	if w.Spec.Owner != "their" || w.Spec.Size != 7 {
		problems = append(problems, fmt.Sprintf("spec %+v (want owner their, size 7)", w.Spec))
	}
	if len(problems) > 0 {
		t.Errorf("after our reconcile: %s", strings.Join(problems, "; "))
	}
}

// TestPatcherRemovesOnlyOursAmongOtherWriters: a reconcile that drops one
// of our labels, one of our conditions and our finalizer, while kubectl
// (server-side apply, its own field manager) has added a label, an
// annotation, a finalizer, a condition and a spec field, either between
// our read and our write or just before a read from a cache held 300 ms
// back (which does not show it), removes ours only: theirs and our other
// entries stay. Typed and unstructured Widgets, through a Patcher and
// through reconcile.For.
func TestPatcherRemovesOnlyOursAmongOtherWriters(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	typed := func() client.Object { return &testapi.Widget{} }
	untyped := func() client.Object {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(testapi.GroupVersion.WithKind("Widget"))
		return u
	}
	for _, tc := range []struct {
		name   string
		empty  func() client.Object
		before bool // kubectl writes before our (cached) read
		cached func(t *testing.T, ns string) client.Client
	}{
		{"typed, between read and write", typed, false, nil},
		{"unstructured, between read and write", untyped, false, nil},
		{"typed, before a lagging cache's read", typed, true, cachedClient(false)},
		{"unstructured, before a lagging cache's read", untyped, true, cachedClient(true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			w := ourWidget(t, ns)
			c := steadyDirect(t)
			if tc.cached != nil {
				c = tc.cached(t, ns)
				waitCachedAny(t, c, tc.empty(), w)
			}
			if tc.before {
				kubectlApplies(t, ns, "w")
			}
			obj := tc.empty()
			if err := c.Get(ctx, client.ObjectKeyFromObject(w), obj); err != nil {
				t.Fatal(err)
			}
			if tc.before && obj.GetLabels()["their"] != "" {
				t.Logf("the cache showed kubectl's change already: the read is not stale")
			}
			p, err := reconcile.NewPatcher(c, obj)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.before {
				kubectlApplies(t, ns, "w")
			}
			dropOurs(t, obj)
			if err := p.Patch(ctx, obj); err != nil {
				t.Fatal(err)
			}
			onlyOursRemoved(t, ns)
		})
	}
	t.Run("typed, reconcile.For, before a lagging cache's read", func(t *testing.T) {
		ns := env.Namespace(t)
		w := ourWidget(t, ns)
		c := cachedClient(false)(t, ns)
		waitCachedAny(t, c, &testapi.Widget{}, w)
		r, err := reconcile.For(c, func(ctx context.Context, obj *testapi.Widget) (ctrl.Result, error) {
			dropOurs(t, obj)
			return ctrl.Result{}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		kubectlApplies(t, ns, "w")
		// As a controller does: reconcile again on a requeue.
		testenv.Eventually(t, "a reconcile without error or requeue", func() error {
			res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)})
			if err != nil || !res.IsZero() {
				return fmt.Errorf("%+v, %v", res, err)
			}
			return nil
		})
		onlyOursRemoved(t, ns)
	})
}

// steadyDirect is a direct client carrying a State whose API reader is
// the client itself.
func steadyDirect(t *testing.T) client.Client {
	t.Helper()
	c, _, err := testapi.NewCountingClient(env.Config, env.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	return testapi.Remembering(c, env.Scheme)
}

// cachedClient starts a manager whose cache, of ns only, is held 300 ms
// back, and returns steady.NewClient of it; with unstructured, its client
// reads unstructured objects from the cache too.
func cachedClient(unstructuredToo bool) func(t *testing.T, ns string) client.Client {
	return func(t *testing.T, ns string) client.Client {
		t.Helper()
		if !unstructuredToo {
			return testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 300 * time.Millisecond,
				Informers: []client.Object{&testapi.Widget{}}, Namespace: ns}).Client
		}
		mgr := env.StartManager(t, testenv.WithTransport(testenv.DelayWatches(300*time.Millisecond)),
			testenv.WithManagerOptions(ctrl.Options{Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}}}))
		return steady.NewClient(mgr)
	}
}

// waitCachedAny waits until c shows obj at its resourceVersion, read into
// objects made like empty.
func waitCachedAny(t *testing.T, c client.Reader, empty, obj client.Object) {
	t.Helper()
	live := get(t, &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: obj.GetName()}})
	testenv.Eventually(t, "the cache shows the Widget", func() error {
		got := empty.DeepCopyObject().(client.Object)
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), got); err != nil {
			return err
		}
		if got.GetResourceVersion() != live.ResourceVersion {
			return fmt.Errorf("at %s, not %s", got.GetResourceVersion(), live.ResourceVersion)
		}
		return nil
	})
}

// TestPatcherRemovesOnlyOursWithoutAStatusSubresource: the same on a kind
// without a status subresource (PlainThing, unstructured), where status is
// written with the object after the status subresource's 404: kubectl
// patch adds a label, a finalizer, a condition and a spec field between
// our read and our write; our reconcile drops one label, our finalizer and
// one condition: only those go.
func TestPatcherRemovesOnlyOursWithoutAStatusSubresource(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	now := time.Now().UTC().Format(time.RFC3339)
	cond := func(typ string) map[string]any {
		return map[string]any{"type": typ, "status": "True", "reason": "R", "message": "m", "lastTransitionTime": now}
	}
	u := newUnstructured("PlainThing", ns, "p")
	u.SetLabels(map[string]string{"ours-1": "x", "ours-2": "x"})
	u.SetFinalizers([]string{"steady.dev/ours"})
	u.Object["spec"] = map[string]any{"size": int64(1)}
	u.Object["status"] = map[string]any{"conditions": []any{cond("OurReady"), cond("OurStale")}}
	u = createU(t, u)
	t.Cleanup(func() {
		_ = env.Client.Patch(context.Background(), newUnstructured("PlainThing", ns, "p"),
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	})
	c := steadyDirect(t)
	obj := newUnstructured("PlainThing", ns, "p")
	if err := c.Get(ctx, client.ObjectKeyFromObject(u), obj); err != nil {
		t.Fatal(err)
	}
	p, err := reconcile.NewPatcher(c, obj)
	if err != nil {
		t.Fatal(err)
	}
	their := fmt.Sprintf(`[{"op":"add","path":"/metadata/labels/their","value":"1"},
		{"op":"add","path":"/metadata/finalizers/-","value":"example.com/their"},
		{"op":"add","path":"/status/conditions/-","value":{"type":"TheirReady","status":"True","reason":"R","message":"m","lastTransitionTime":%q}},
		{"op":"add","path":"/spec/owner","value":"their"}]`, now)
	if err := env.Client.Patch(ctx, newUnstructured("PlainThing", ns, "p"), client.RawPatch(types.JSONPatchType, []byte(their)), client.FieldOwner("kubectl-patch")); err != nil {
		t.Fatal(err)
	}
	labels := obj.GetLabels()
	delete(labels, "ours-1")
	obj.SetLabels(labels)
	obj.SetFinalizers(nil)
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	conds = slices.DeleteFunc(conds, func(c any) bool { return c.(map[string]any)["type"] == "OurStale" })
	_ = unstructured.SetNestedSlice(obj.Object, conds, "status", "conditions")
	_ = unstructured.SetNestedField(obj.Object, int64(7), "spec", "size")
	if err := p.Patch(ctx, obj); err != nil {
		t.Fatal(err)
	}
	got := getU(t, u)
	var types []string
	conds, _, _ = unstructured.NestedSlice(got.Object, "status", "conditions")
	for _, c := range conds {
		types = append(types, c.(map[string]any)["type"].(string))
	}
	slices.Sort(types)
	owner, _, _ := unstructured.NestedString(got.Object, "spec", "owner")
	size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size")
	if l := got.GetLabels(); l["their"] != "1" || l["ours-2"] != "x" || l["ours-1"] != "" ||
		!slices.Equal(got.GetFinalizers(), []string{"example.com/their"}) ||
		!slices.Equal(types, []string{"OurReady", "TheirReady"}) || owner != "their" || size != 7 {
		t.Errorf("after our reconcile: labels %v, finalizers %v, conditions %v, spec %v; want ours-1, our finalizer and OurStale gone, the rest kept",
			l, got.GetFinalizers(), types, got.Object["spec"])
	}
}

// TestDroppingOurMapKeepsAKeyALaggingCacheDidNotShow: our reconcile drops
// a whole map of ours (spec.params = nil) on a Thing read from a cache held
// 300 ms back, which does not show the key kubectl added to that map just
// before: the key is kubectl's, and stays; ours goes.
func TestDroppingOurMapKeepsAKeyALaggingCacheDidNotShow(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	th := &Thing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t"}, Spec: ThingSpec{Params: map[string]string{"ours": "1"}}}
	if err := env.Client.Create(ctx, th); err != nil {
		t.Fatal(err)
	}
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 300 * time.Millisecond, Informers: []client.Object{&Thing{}}, Namespace: ns})
	testenv.Eventually(t, "the cache shows the Thing", func() error {
		return cc.Client.Get(ctx, client.ObjectKeyFromObject(th), &Thing{})
	})
	if err := env.Client.Patch(ctx, &Thing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"params":{"theirs":"1"}}}`)), client.FieldOwner("kubectl-patch")); err != nil {
		t.Fatal(err)
	}
	obj := &Thing{}
	if err := cc.Client.Get(ctx, client.ObjectKeyFromObject(th), obj); err != nil {
		t.Fatal(err)
	}
	if obj.Spec.Params["theirs"] != "" {
		t.Logf("the cache showed kubectl's key already: the read is not stale")
	}
	p, err := reconcile.NewPatcher(cc.Client, obj)
	if err != nil {
		t.Fatal(err)
	}
	obj.Spec.Params = nil
	if err := p.Patch(ctx, obj); err != nil {
		t.Fatal(err)
	}
	got := &Thing{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(th), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Params["theirs"] != "1" || got.Spec.Params["ours"] != "" {
		t.Errorf("spec.params %v; want theirs kept, ours gone", got.Spec.Params)
	}
}

// TestDroppingATypedMapKeepsAFieldItsTypeLacks: docs/reconcile.md says
// that dropping a whole map "removes the keys you read, never one another
// writer added since". A typed object reads only what its Go type holds:
// kubectl added spec.topology.extra, which Topology lacks, before our read;
// our reconcile drops spec.topology (Topology = nil). We never read extra
// (the type cannot): it is kubectl's, and stays; our class goes.
func TestDroppingATypedMapKeepsAFieldItsTypeLacks(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	th := &Thing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t"}, Spec: ThingSpec{Topology: &Topology{Class: "ours"}, Replicas: 1}}
	if err := env.Client.Create(ctx, th); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Patch(ctx, &Thing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"topology":{"extra":"theirs"}}}`)), client.FieldOwner("kubectl-patch")); err != nil {
		t.Fatal(err)
	}
	obj := &Thing{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(th), obj); err != nil {
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
	got := getU(t, newUnstructured("Thing", ns, "t"))
	extra, _, _ := unstructured.NestedString(got.Object, "spec", "topology", "extra")
	class, _, _ := unstructured.NestedString(got.Object, "spec", "topology", "class")
	if extra != "theirs" || class != "" {
		t.Errorf("spec %v; want topology.extra kept (kubectl's, never read), class gone", got.Object["spec"])
	}
}

package reconcile_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// Item 1: a finalizer another writer added after our read survives a Patch
// that writes status and metadata.
func TestStatusAndFinalizerKeepAForeignFinalizer(t *testing.T) {
	env.Require(t)
	for _, tc := range []struct {
		name   string
		status func(w *testapi.Widget)
	}{
		{"status field", func(w *testapi.Widget) { w.Status.Phase = "Ready" }},
		{"condition", func(w *testapi.Widget) { conditions.MarkTrue(w, "Ready", "Ok", "") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, c, n := fixture(t)
			ctx := context.Background()
			p, _ := reconcile.NewPatcher(c, w)
			other := get(t, w)
			other.Finalizers = append(other.Finalizers, "other.io/x")
			if err := env.Client.Update(ctx, other); err != nil {
				t.Fatal(err)
			}
			n.Reset()
			w.Finalizers = append(w.Finalizers, "test.steady.dev/mine")
			tc.status(w)
			want := w.DeepCopy().Status
			if err := p.Patch(ctx, w); err != nil {
				t.Fatal(err)
			}
			got := get(t, w)
			if !slices.Equal(got.Finalizers, []string{"other.io/x", "test.steady.dev/mine"}) {
				t.Errorf("finalizers = %v, want other.io/x and ours", got.Finalizers)
			}
			if got.Status.Phase != want.Phase || len(got.Status.Conditions) != len(want.Conditions) {
				t.Errorf("status = %+v", got.Status)
			}
			t.Logf("requests: %s", n)
		})
	}
}

// Item 1: an ownerReference another writer added after our read survives
// our label change and our own reference.
func TestForeignOwnerReferenceSurvives(t *testing.T) {
	env.Require(t)
	w, c, _ := fixture(t)
	ctx := context.Background()
	p, _ := reconcile.NewPatcher(c, w)
	ref := func(name, uid string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: types.UID(uid)}
	}
	other := get(t, w)
	other.OwnerReferences = append(other.OwnerReferences, ref("theirs", "11111111-1111-1111-1111-111111111111"))
	if err := env.Client.Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	w.Labels = map[string]string{"team": "a"}
	w.OwnerReferences = append(w.OwnerReferences, ref("ours", "22222222-2222-2222-2222-222222222222"))
	if err := p.Patch(ctx, w); err != nil {
		t.Fatal(err)
	}
	got := get(t, w)
	var names []string
	for _, r := range got.OwnerReferences {
		names = append(names, r.Name)
	}
	if !slices.Equal(names, []string{"theirs", "ours"}) || got.Labels["team"] != "a" {
		t.Errorf("ownerReferences %v, labels %v", names, got.Labels)
	}

	// And removing ours leaves theirs.
	p, _ = reconcile.NewPatcher(c, got)
	got.OwnerReferences = got.OwnerReferences[:1]
	if err := p.Patch(ctx, got); err != nil {
		t.Fatal(err)
	}
	if refs := get(t, w).OwnerReferences; len(refs) != 1 || refs[0].Name != "theirs" {
		t.Errorf("after removing ours: %v", refs)
	}
}

// v1beta1Cond is a condition of cluster-api's v1beta1 shape, as JSON.
func v1beta1Cond(typ, status, severity, reason string) map[string]any {
	c := map[string]any{"type": typ, "status": status, "lastTransitionTime": "2025-01-01T00:00:00Z"}
	if severity != "" {
		c["severity"] = severity
	}
	if reason != "" {
		c["reason"] = reason
	}
	return c
}

// Item 2: conditions of cluster-api's v1beta1 shape: a change of severity
// only is written, a condition without reason is not sent with "reason":""
// (which the schema refuses), another writer's entries survive, and so do
// those of a second list named with WithConditionLists.
func TestConditionsOfV1beta1Shape(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	g := createU(t, newUnstructured("Gadget", env.Namespace(t), "g"))
	g = writeStatus(t, g, map[string]any{
		"conditions": []any{v1beta1Cond("A", "False", "Warning", "Broken"), v1beta1Cond("B", "True", "", "")},
		"deprecated": map[string]any{"v1beta1": map[string]any{"conditions": []any{v1beta1Cond("Old", "True", "", "")}}},
	})
	c, n, _ := testapi.NewCountingClient(env.Config, env.Scheme)
	p, err := reconcile.NewPatcher(c, g)
	if err != nil {
		t.Fatal(err)
	}

	// Another writer adds a condition to each list.
	other := g.DeepCopy()
	_ = unstructured.SetNestedSlice(other.Object, []any{v1beta1Cond("A", "False", "Warning", "Broken"), v1beta1Cond("B", "True", "", ""), v1beta1Cond("Theirs", "False", "Info", "Waiting")}, "status", "conditions")
	_ = unstructured.SetNestedSlice(other.Object, []any{v1beta1Cond("Old", "True", "", ""), v1beta1Cond("TheirsOld", "True", "", "")}, "status", "deprecated", "v1beta1", "conditions")
	if err := env.Client.Status().Update(ctx, other); err != nil {
		t.Fatal(err)
	}

	// We change A's severity only, mark C true without a reason, and
	// change the second list's Old.
	_ = unstructured.SetNestedSlice(g.Object, []any{v1beta1Cond("A", "False", "Error", "Broken"), v1beta1Cond("B", "True", "", ""), v1beta1Cond("C", "True", "", "")}, "status", "conditions")
	_ = unstructured.SetNestedSlice(g.Object, []any{v1beta1Cond("Old", "False", "Error", "Gone")}, "status", "deprecated", "v1beta1", "conditions")
	n.Reset()
	if err := p.Patch(ctx, g, reconcile.WithConditionLists{"status.deprecated.v1beta1.conditions"}); err != nil {
		t.Fatal(err)
	}
	got := getU(t, g)
	conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
	want := []any{v1beta1Cond("A", "False", "Error", "Broken"), v1beta1Cond("B", "True", "", ""), v1beta1Cond("Theirs", "False", "Info", "Waiting"), v1beta1Cond("C", "True", "", "")}
	if mustJSON(conds) != mustJSON(want) {
		t.Errorf("conditions\n got %s\nwant %s", mustJSON(conds), mustJSON(want))
	}
	old, _, _ := unstructured.NestedSlice(got.Object, "status", "deprecated", "v1beta1", "conditions")
	wantOld := []any{v1beta1Cond("Old", "False", "Error", "Gone"), v1beta1Cond("TheirsOld", "True", "", "")}
	if mustJSON(old) != mustJSON(wantOld) {
		t.Errorf("deprecated conditions\n got %s\nwant %s", mustJSON(old), mustJSON(wantOld))
	}
	if n.Get("PATCH") != 2 || n.Get("GET") != 1 {
		t.Errorf("requests %s: want a conflicting PATCH, a GET, a PATCH", n)
	}

	// A change of severity alone is written.
	p, _ = reconcile.NewPatcher(c, got)
	conds[0].(map[string]any)["severity"] = "Info"
	_ = unstructured.SetNestedSlice(got.Object, conds, "status", "conditions")
	if err := p.Patch(ctx, got); err != nil {
		t.Fatal(err)
	}
	if s, _, _ := unstructured.NestedSlice(getU(t, g).Object, "status", "conditions"); s[0].(map[string]any)["severity"] != "Info" {
		t.Errorf("severity change not written: %s", mustJSON(s))
	}
}

// Item 2 on core objects: a Deployment's lastUpdateTime and a Pod's
// lastProbeTime are kept when another condition changes, and a change of
// only that field is written.
func TestConditionsOfCoreShapes(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	t0 := metav1.NewTime(metav1.Now().Add(-time1h).Truncate(1e9))
	t1 := metav1.NewTime(t0.Add(time1m))

	labels := map[string]string{"app": "a"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "d"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if err := env.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	d.Status.Conditions = []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, LastUpdateTime: t0, LastTransitionTime: t0, Reason: "NewReplicaSetAvailable"},
		{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, LastUpdateTime: t0, LastTransitionTime: t0, Reason: "MinimumReplicasAvailable"},
	}
	if err := env.Client.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	p, _ := reconcile.NewPatcher(env.Client, d)
	d.Status.Conditions[0].LastUpdateTime = t1 // only lastUpdateTime
	if err := p.Patch(ctx, d); err != nil {
		t.Fatal(err)
	}
	gotD := &appsv1.Deployment{}
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(d), gotD)
	if !gotD.Status.Conditions[0].LastUpdateTime.Equal(&t1) || !gotD.Status.Conditions[1].LastUpdateTime.Equal(&t0) {
		t.Errorf("deployment conditions = %+v", gotD.Status.Conditions)
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastProbeTime: t0, LastTransitionTime: t0},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastProbeTime: t0, LastTransitionTime: t0},
	}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	p, _ = reconcile.NewPatcher(env.Client, pod)
	pod.Status.Conditions[1].Status = corev1.ConditionTrue
	pod.Status.Conditions[1].LastProbeTime = t1
	if err := p.Patch(ctx, pod); err != nil {
		t.Fatal(err)
	}
	gotP := &corev1.Pod{}
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(pod), gotP)
	if !gotP.Status.Conditions[0].LastProbeTime.Equal(&t0) || !gotP.Status.Conditions[1].LastProbeTime.Equal(&t1) ||
		gotP.Status.Conditions[1].Status != corev1.ConditionTrue {
		t.Errorf("pod conditions = %+v", gotP.Status.Conditions)
	}
}

// Item 5: an empty list set under an absent omitempty parent is no change:
// no request, and the generation stays.
func TestEmptyListUnderAbsentParentIsNoChange(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	th := &Thing{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "t"}}
	createU(t, newUnstructured("Thing", th.Namespace, th.Name))
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(th), th); err != nil {
		t.Fatal(err)
	}
	c, n, _ := testapi.NewCountingClient(env.Config, env.Scheme)
	p, _ := reconcile.NewPatcher(c, th)
	th.Spec.Topology = &Topology{Variables: []string{}}
	if err := p.Patch(ctx, th); err != nil {
		t.Fatal(err)
	}
	got := &Thing{}
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(th), got)
	if n.Writes() != 0 || got.Generation != 1 {
		t.Errorf("requests %s, generation %d: want none and 1", n, got.Generation)
	}
	// A real change under the same parent is written.
	th.Spec.Topology.Class = "small"
	if err := p.Patch(ctx, th); err != nil {
		t.Fatal(err)
	}
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(th), got)
	if got.Spec.Topology == nil || got.Spec.Topology.Class != "small" {
		t.Errorf("spec = %+v", got.Spec)
	}
}

// Item 6: Patch refuses an object other than the snapshotted one.
func TestPatchRefusesAnotherObject(t *testing.T) {
	env.Require(t)
	w, c, n := fixture(t)
	p, _ := reconcile.NewPatcher(c, w)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name}}
	other := w.DeepCopy()
	other.Name = "other"
	u := newUnstructured("Thing", w.Namespace, w.Name)
	for _, obj := range []client.Object{cm, other, u} {
		err := p.Patch(context.Background(), obj)
		var me *reconcile.MismatchError
		if !errors.As(err, &me) {
			t.Errorf("Patch(%T %s) = %v, want a MismatchError", obj, obj.GetName(), err)
		}
	}
	if n.Writes() != 0 {
		t.Errorf("requests: %s", n)
	}
}

// Item 7: a Patcher whose object was deleted and recreated meanwhile does
// not write onto the new object, also when the retry re-reads it.
func TestPatchNeverWritesARecreatedObject(t *testing.T) {
	env.Require(t)
	for _, tc := range []struct {
		name   string
		change func(w *testapi.Widget)
	}{
		{"spec only (no lock)", func(w *testapi.Widget) { w.Spec.Size = 9 }},
		{"finalizers (locked, rebased on re-read)", func(w *testapi.Widget) { w.Finalizers = []string{"test.steady.dev/mine"}; w.Spec.Size = 9 }},
		{"status", func(w *testapi.Widget) { w.Status.Phase = "Mine"; conditions.MarkTrue(w, "Mine", "Ok", "") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, c, _ := fixture(t)
			ctx := context.Background()
			p, _ := reconcile.NewPatcher(c, w)
			if err := env.Client.Delete(ctx, w.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			fresh := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name}, Spec: testapi.WidgetSpec{Size: 1}}
			if err := env.Client.Create(ctx, fresh); err != nil {
				t.Fatal(err)
			}
			tc.change(w)
			if err := p.Patch(ctx, w); err != nil {
				t.Fatalf("Patch = %v, want nil (the object is gone)", err)
			}
			got := get(t, fresh)
			if got.UID != fresh.UID || got.Spec.Size != 1 || len(got.Finalizers) != 0 || got.Status.Phase != "" {
				t.Errorf("the new object was written: %+v", got)
			}
		})
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

// Faults injected: nothing lost, nothing claimed that is not true.
var _ = apierrors.IsNotFound
var _ = ptr.To[int]

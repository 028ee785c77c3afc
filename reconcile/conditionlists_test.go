package reconcile_test

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

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

// Dropping a whole parent of a further condition list (cluster-api v1beta2
// dropping status.deprecated) is a removal: the other fields under that
// parent must go too.
func TestRemovingTheParentOfAConditionList(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	u := createU(t, newUnstructured("Thing", env.Namespace(t), "t"))
	u = writeStatus(t, u, map[string]any{
		"phase": "Running",
		"deprecated": map[string]any{"v1beta1": map[string]any{
			"failureReason": "Boom",
			"conditions": []any{map[string]any{"type": "Ready", "status": "True", "severity": "",
				"lastTransitionTime": "2024-01-01T00:00:00Z"}},
		}},
	})
	for _, lists := range []bool{false, true} {
		obj := getU(t, u)
		if _, found, _ := unstructured.NestedMap(obj.Object, "status", "deprecated"); !found {
			obj = writeStatus(t, obj, map[string]any{"phase": "Running", "deprecated": map[string]any{"v1beta1": map[string]any{
				"failureReason": "Boom",
				"conditions":    []any{map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}},
			}}})
		}
		p, _ := reconcile.NewPatcher(env.Client, obj)
		unstructured.RemoveNestedField(obj.Object, "status", "deprecated")
		var opts []reconcile.PatchOption
		if lists {
			opts = append(opts, reconcile.WithConditionLists{"status.deprecated.v1beta1.conditions"})
		}
		if err := p.Patch(ctx, obj, opts...); err != nil {
			t.Fatal(err)
		}
		got := getU(t, u)
		if d, found, _ := unstructured.NestedFieldNoCopy(got.Object, "status", "deprecated"); found {
			t.Errorf("WithConditionLists %v: status.deprecated removed, stored %v", lists, d)
		}
	}
}

// The documented limit of typed objects (docs/reconcile.md, "Typed objects
// and condition fields their type lacks"): a condition list is rebased on
// typed reads and sent whole, so when this reconcile writes the list, the
// fields another writer set that the Go type lacks (cluster-api's severity,
// a Pod's lastProbeTime, read as metav1.Condition) are lost on every entry.
// Through an unstructured object, or a type that carries those fields, they
// are kept. If this test fails because the typed case keeps them, the limit
// is gone: update the docs.
func TestTypedConditionsLoseFieldsTheirTypeLacks(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	for _, typed := range []bool{true, false} {
		t.Run(fmt.Sprintf("typed %v", typed), func(t *testing.T) {
			u := createU(t, newUnstructured("Thing", env.Namespace(t), "t"))
			writeStatus(t, u, map[string]any{"conditions": []any{map[string]any{
				"type": "Theirs", "status": "True", "reason": "Set", "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z",
				"severity": "Info", "lastProbeTime": "2024-01-02T00:00:00Z",
			}}})
			mine := metav1.Condition{Type: "Mine", Status: metav1.ConditionTrue, Reason: "Set", LastTransitionTime: metav1.Now()}
			if typed {
				var th Thing
				must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(u), &th))
				p, _ := reconcile.NewPatcher(env.Client, &th)
				th.Status.Conditions = append(th.Status.Conditions, mine)
				must(t, p.Patch(ctx, &th))
			} else {
				cur := getU(t, u)
				p, _ := reconcile.NewPatcher(env.Client, cur)
				m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&mine)
				must(t, err)
				list, _, _ := unstructured.NestedSlice(cur.Object, "status", "conditions")
				must(t, unstructured.SetNestedSlice(cur.Object, append(list, m), "status", "conditions"))
				must(t, p.Patch(ctx, cur))
			}
			list, _, _ := unstructured.NestedSlice(getU(t, u).Object, "status", "conditions")
			for _, c := range list {
				m := c.(map[string]any)
				if m["type"] != "Theirs" {
					continue
				}
				kept := m["severity"] == "Info" && m["lastProbeTime"] != nil
				if kept == typed {
					t.Errorf("typed %v: their condition %v: the documented limit no longer holds as written", typed, m)
				}
			}
		})
	}
}

// A field at a condition-list path that is not a list (an object keyed by
// type, a string: some APIs do that) is an ordinary field: its change is
// written, not dropped from the patch as a list that never changes.
func TestNonListAtAConditionPathIsWritten(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	u := createU(t, newUnstructured("Thing", env.Namespace(t), "t"))
	u = writeStatus(t, u, map[string]any{"conditions": map[string]any{"Ready": "False"}})
	p, _ := reconcile.NewPatcher(env.Client, u)
	_ = unstructured.SetNestedField(u.Object, "True", "status", "conditions", "Ready")
	if err := p.Patch(ctx, u); err != nil {
		t.Fatal(err)
	}
	got := getU(t, u)
	if v, _, _ := unstructured.NestedString(got.Object, "status", "conditions", "Ready"); v != "True" {
		t.Errorf("status.conditions = %v", got.Object["status"])
	}
}

package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// TestClusterAPIPatchScenarios ports the scenarios of cluster-api's
// util/patch tests (v1.14.2, util/patch/test/patch_test.go) onto the
// Patcher, with Widget in the place of Cluster/MachineSet. Where steady
// behaves differently by design, the case says so and checks steady's
// documented behaviour:
//
//   - "unresolvable conflict": cluster-api fails when another writer changed
//     a condition this reconcile also changed; steady's documented rule is
//     that the condition this reconcile changed wins (no error).
//   - "force overwrite": steady has no such switch; WithOwnedConditions
//     gives the same result per type.
//   - "preserving its status" on an unstructured object: status set only in
//     memory before NewPatcher is part of the snapshot, so it is no change
//     and not written; after Patch obj holds the API server's answer, which
//     lacks it (cluster-api leaves the in-memory copy alone).
//   - observedGeneration with a spec change: steady writes status first and
//     records the generation it read; cluster-api writes spec first and
//     records the generation its own spec write produced. The next reconcile
//     (which that write triggers) records the new generation.
//   - the v1beta1/v1beta2 condition phases are TestConditionsOfV1beta1Shape
//     (two condition lists, WithConditionLists).
func TestClusterAPIPatchScenarios(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, w *testapi.Widget, c client.Client, n *testapi.Counter)
	}{
		{"should mark it ready", func(t *testing.T, w *testapi.Widget, c client.Client, n *testapi.Counter) {
			p, _ := reconcile.NewPatcher(c, w)
			conditions.MarkTrue(w, conditions.Ready, "Ok", "")
			must(t, p.Patch(ctx, w))
			expect(t, conditions.IsTrue(get(t, w), conditions.Ready) && n.Get("PATCH") == 1, "ready, 1 PATCH: %s", n)
		}},
		{"should recover if there is a resolvable conflict", func(t *testing.T, w *testapi.Widget, c client.Client, n *testapi.Counter) {
			p, _ := reconcile.NewPatcher(c, w)
			other := w.DeepCopy()
			conditions.MarkFalse(other, "Test", "reason", "message")
			must(t, env.Client.Status().Update(ctx, other))
			conditions.MarkTrue(w, conditions.Ready, "Ok", "")
			must(t, p.Patch(ctx, w))
			got := get(t, w)
			expect(t, isFalse(got, "Test") && conditions.IsTrue(got, conditions.Ready), "conditions %+v", got.Status.Conditions)
		}},
		{"should recover if there is a resolvable conflict, incl. patch spec and status", func(t *testing.T, w *testapi.Widget, c client.Client, n *testapi.Counter) {
			p, _ := reconcile.NewPatcher(c, w)
			other := w.DeepCopy()
			other.Spec.Owner = "other"
			must(t, env.Client.Update(ctx, other))
			other = get(t, w)
			conditions.MarkFalse(other, "Test", "reason", "message")
			must(t, env.Client.Status().Update(ctx, other))
			w.Spec.Color = "blue"
			w.Status.Phase = "Provisioned"
			conditions.MarkTrue(w, conditions.Ready, "Ok", "")
			must(t, p.Patch(ctx, w))
			got := get(t, w)
			expect(t, got.Spec.Owner == "other" && got.Spec.Color == "blue" && got.Status.Phase == "Provisioned" &&
				isFalse(got, "Test") && conditions.IsTrue(got, conditions.Ready), "object %+v", got)
		}},
		{"unresolvable conflict (differs: ours wins, no error)", func(t *testing.T, w *testapi.Widget, c client.Client, n *testapi.Counter) {
			p, _ := reconcile.NewPatcher(c, w)
			other := w.DeepCopy()
			conditions.MarkFalse(other, conditions.Ready, "Theirs", "")
			must(t, env.Client.Status().Update(ctx, other))
			conditions.MarkTrue(w, conditions.Ready, "Ours", "")
			must(t, p.Patch(ctx, w))
			expect(t, conditions.Get(get(t, w), conditions.Ready).Reason == "Ours", "ready %+v", conditions.Get(get(t, w), conditions.Ready))
		}},
		{"unresolvable conflict but the condition is owned by the controller", func(t *testing.T, w *testapi.Widget, c client.Client, n *testapi.Counter) {
			conditions.MarkTrue(w, conditions.Ready, "Ours", "")
			must(t, env.Client.Status().Update(ctx, w))
			w = get(t, w)
			p, _ := reconcile.NewPatcher(c, w)
			other := w.DeepCopy()
			conditions.MarkFalse(other, conditions.Ready, "Theirs", "")
			must(t, env.Client.Status().Update(ctx, other))
			conditions.MarkTrue(w, "Other", "Ok", "")
			must(t, p.Patch(ctx, w, reconcile.WithOwnedConditions{conditions.Ready}))
			got := get(t, w)
			expect(t, conditions.Get(got, conditions.Ready).Reason == "Ours" && conditions.IsTrue(got, "Other"), "conditions %+v", got.Status.Conditions)
		}},
		{"add a finalizer", func(t *testing.T, w *testapi.Widget, c client.Client, n *testapi.Counter) {
			p, _ := reconcile.NewPatcher(c, w)
			w.Finalizers = append(w.Finalizers, "cluster.x-k8s.io/test")
			must(t, p.Patch(ctx, w))
			expect(t, slices.Equal(get(t, w).Finalizers, []string{"cluster.x-k8s.io/test"}) && n.Get("PATCH") == 1, "finalizers, requests %s", n)
		}},
		{"removing finalizers", func(t *testing.T, w *testapi.Widget, c client.Client, n *testapi.Counter) {
			w.Finalizers = []string{"cluster.x-k8s.io/test"}
			must(t, env.Client.Update(ctx, w))
			p, _ := reconcile.NewPatcher(c, w)
			w.Finalizers = nil
			must(t, p.Patch(ctx, w))
			expect(t, len(get(t, w).Finalizers) == 0, "finalizers %v", get(t, w).Finalizers)
		}},
		{"updating spec", func(t *testing.T, w *testapi.Widget, c client.Client, n *testapi.Counter) {
			p, _ := reconcile.NewPatcher(c, w)
			w.Spec.Size = 9
			w.Spec.Owner = "test"
			must(t, p.Patch(ctx, w))
			got := get(t, w)
			expect(t, got.Spec.Size == 9 && got.Spec.Owner == "test" && w.ResourceVersion == got.ResourceVersion, "spec %+v", got.Spec)
		}},
		{"updating status", func(t *testing.T, w *testapi.Widget, c client.Client, n *testapi.Counter) {
			p, _ := reconcile.NewPatcher(c, w)
			w.Status.Replicas = 3
			must(t, p.Patch(ctx, w))
			expect(t, get(t, w).Status.Replicas == 3 && n.Get("PATCH") == 1, "requests %s", n)
		}},
		{"updating both spec, status, and adding a condition", func(t *testing.T, w *testapi.Widget, c client.Client, n *testapi.Counter) {
			p, _ := reconcile.NewPatcher(c, w)
			w.Spec.Size = 4
			w.Status.Phase = "Running"
			conditions.MarkTrue(w, conditions.Ready, "Ok", "")
			must(t, p.Patch(ctx, w))
			got := get(t, w)
			expect(t, got.Spec.Size == 4 && got.Status.Phase == "Running" && conditions.IsTrue(got, conditions.Ready) && n.Get("PATCH") == 2, "object %+v, requests %s", got, n)
		}},
		{"observedGeneration when updating spec (differs: the generation read)", func(t *testing.T, w *testapi.Widget, c client.Client, n *testapi.Counter) {
			p, _ := reconcile.NewPatcher(c, w)
			gen := w.Generation
			w.Spec.Size = 6
			must(t, p.Patch(ctx, w, reconcile.WithObservedGeneration{}))
			got := get(t, w)
			expect(t, got.Status.ObservedGeneration == gen && got.Generation == gen+1 && n.Get("PATCH") == 2, "generation %d, observed %d", got.Generation, got.Status.ObservedGeneration)
			// The reconcile that follows records the new generation.
			p, _ = reconcile.NewPatcher(c, got)
			must(t, p.Patch(ctx, got, reconcile.WithObservedGeneration{}))
			expect(t, get(t, w).Status.ObservedGeneration == gen+1, "next reconcile: observed %d", get(t, w).Status.ObservedGeneration)
		}},
		{"observedGeneration when updating spec, status, and metadata", func(t *testing.T, w *testapi.Widget, c client.Client, n *testapi.Counter) {
			p, _ := reconcile.NewPatcher(c, w)
			w.Spec.Size = 6
			w.Status.Replicas = 6
			w.Labels = map[string]string{"test-label": "test"}
			must(t, p.Patch(ctx, w, reconcile.WithObservedGeneration{}))
			got := get(t, w)
			expect(t, got.Spec.Size == 6 && got.Status.Replicas == 6 && got.Labels["test-label"] == "test" && got.Status.ObservedGeneration == 1, "object %+v", got)
		}},
		{"observedGeneration without any changes", func(t *testing.T, w *testapi.Widget, c client.Client, n *testapi.Counter) {
			w.Status.ObservedGeneration = w.Generation
			must(t, env.Client.Status().Update(ctx, w))
			w = get(t, w)
			p, _ := reconcile.NewPatcher(c, w)
			must(t, p.Patch(ctx, w, reconcile.WithObservedGeneration{}))
			expect(t, n.Writes() == 0, "requests %s", n)
		}},
		{"should error if the object isn't the same", func(t *testing.T, w *testapi.Widget, c client.Client, n *testapi.Counter) {
			p, _ := reconcile.NewPatcher(c, w)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name}}
			var me *reconcile.MismatchError
			expect(t, errors.As(p.Patch(ctx, cm), &me), "no MismatchError")
		}},
		{"should not error if there are no finalizers and deletion timestamp is not nil", func(t *testing.T, w *testapi.Widget, c client.Client, n *testapi.Counter) {
			w.Finalizers = []string{"block-deletion"}
			must(t, env.Client.Update(ctx, w))
			must(t, env.Client.Delete(ctx, w))
			w = get(t, w)
			p, _ := reconcile.NewPatcher(c, w)
			w.Finalizers = nil
			must(t, p.Patch(ctx, w))
		}},
		{"should not send empty spec or status patches", func(t *testing.T, _ *testapi.Widget, c client.Client, n *testapi.Counter) {
			th := &Thing{}
			u := createU(t, newUnstructured("Thing", env.Namespace(t), "empty"))
			must(t, c.Get(ctx, client.ObjectKeyFromObject(u), th))
			n.Reset()
			p, _ := reconcile.NewPatcher(c, th)
			th.Spec.Topology = &Topology{Variables: []string{}}
			th.Status.Conditions = []metav1.Condition{}
			must(t, p.Patch(ctx, th))
			expect(t, n.Writes() == 0, "requests %s", n)
		}},
		{"unstructured: adding an owner reference, preserving its status (differs: see above)", func(t *testing.T, _ *testapi.Widget, c client.Client, n *testapi.Counter) {
			u := createU(t, newUnstructured("Thing", env.Namespace(t), "u"))
			u.Object["status"] = map[string]any{"ready": true}
			p, _ := reconcile.NewPatcher(c, u)
			refs := []metav1.OwnerReference{{APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "Cluster", Name: "test", UID: "fake-uid"}}
			u.SetOwnerReferences(refs)
			must(t, p.Patch(ctx, u))
			got := getU(t, u)
			_, hasStatus, _ := unstructured.NestedBool(got.Object, "status", "ready")
			expect(t, len(got.GetOwnerReferences()) == 1 && got.GetOwnerReferences()[0].Name == "test" && !hasStatus, "object %s", mustJSON(got.Object))
		}},
		{"should patch a corev1.ConfigMap object", func(t *testing.T, w *testapi.Widget, c client.Client, n *testapi.Counter) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: "cm"}, Data: map[string]string{"1": "one", "2": "two"}}
			must(t, c.Create(ctx, cm))
			p, _ := reconcile.NewPatcher(c, cm)
			cm.Data = map[string]string{"1": "one", "3": "three"}
			must(t, p.Patch(ctx, cm))
			got := &corev1.ConfigMap{}
			must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(cm), got))
			expect(t, fmt.Sprint(got.Data) == "map[1:one 3:three]", "data %v", got.Data)
		}},
		{"should patch conditions on a corev1.Node object", func(t *testing.T, w *testapi.Widget, c client.Client, n *testapi.Counter) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + w.Namespace}}
			must(t, c.Create(ctx, node))
			t.Cleanup(func() { _ = env.Client.Delete(ctx, node) })
			now := metav1.Now().Rfc3339Copy()
			node.Status.Conditions = []corev1.NodeCondition{{Type: "Other", Status: corev1.ConditionTrue, LastHeartbeatTime: now, Reason: "x"}}
			must(t, c.Status().Update(ctx, node))
			p, _ := reconcile.NewPatcher(c, node)
			other := node.DeepCopy()
			other.Status.Conditions = append(other.Status.Conditions, corev1.NodeCondition{Type: "Theirs", Status: corev1.ConditionFalse, LastHeartbeatTime: now})
			must(t, env.Client.Status().Update(ctx, other))
			node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: now, Reason: "Ok"})
			must(t, p.Patch(ctx, node))
			got := &corev1.Node{}
			must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(node), got))
			var types []string
			for _, c := range got.Status.Conditions {
				types = append(types, string(c.Type))
				expect(t, c.LastHeartbeatTime.Equal(&now), "%s lost its lastHeartbeatTime", c.Type)
			}
			expect(t, slices.Equal(types, []string{"Other", "Theirs", "Ready"}), "conditions %v", types)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, c, n := fixture(t)
			tc.run(t, w, c, n)
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func expect(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Errorf(format, args...)
	}
}

// isFalse reports whether obj has the condition with status False.
func isFalse(obj conditions.Getter, conditionType string) bool {
	c := conditions.Get(obj, conditionType)
	return c != nil && c.Status == metav1.ConditionFalse
}

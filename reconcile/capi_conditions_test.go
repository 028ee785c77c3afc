package reconcile_test

import (
	"context"
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	v1beta1conditions "sigs.k8s.io/cluster-api/util/deprecated/v1beta1/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/reconcile"
)

// Gadget is a typed view of gadgets.test.steady.dev, whose conditions are
// cluster-api's v1beta1 Conditions (with severity; reason and message
// omitted when empty, and refused by the schema when empty).
type Gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              map[string]any `json:"spec,omitempty"`
	Status            GadgetStatus   `json:"status,omitempty"`
}

type GadgetStatus struct {
	Phase      string               `json:"phase,omitempty"`
	Conditions clusterv1.Conditions `json:"conditions,omitempty"`
}

func (g *Gadget) GetConditions() clusterv1.Conditions  { return g.Status.Conditions }
func (g *Gadget) SetConditions(c clusterv1.Conditions) { g.Status.Conditions = c }

func (g *Gadget) DeepCopyObject() runtime.Object {
	b, _ := json.Marshal(g)
	out := &Gadget{}
	_ = json.Unmarshal(b, out)
	return out
}

type GadgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gadget `json:"items"`
}

func (l *GadgetList) DeepCopyObject() runtime.Object {
	b, _ := json.Marshal(l)
	out := &GadgetList{}
	_ = json.Unmarshal(b, out)
	return out
}

// Item 2 with cluster-api's own v1beta1 helpers: MarkTrue of a condition
// without reason is accepted by the v1beta1 schema (nothing invented), and
// a change of severity alone is written.
func TestClusterAPIV1beta1MarkTrue(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	createU(t, newUnstructured("Gadget", ns, "g"))
	g := &Gadget{}
	key := client.ObjectKey{Namespace: ns, Name: "g"}
	must(t, env.Client.Get(ctx, key, g))
	v1beta1conditions.MarkFalse(g, "A", "Broken", clusterv1.ConditionSeverityWarning, "broken")
	must(t, env.Client.Status().Update(ctx, g))
	must(t, env.Client.Get(ctx, key, g))

	p, err := reconcile.NewPatcher(env.Client, g)
	must(t, err)
	v1beta1conditions.MarkTrue(g, "B")
	must(t, p.Patch(ctx, g))

	v1beta1conditions.MarkFalse(g, "A", "Broken", clusterv1.ConditionSeverityError, "broken") // severity only
	must(t, p.Patch(ctx, g))

	got := &Gadget{}
	must(t, env.Client.Get(ctx, key, got))
	a, b := v1beta1conditions.Get(got, "A"), v1beta1conditions.Get(got, "B")
	expect(t, a != nil && a.Severity == clusterv1.ConditionSeverityError && a.Reason == "Broken", "A = %+v", a)
	expect(t, b != nil && b.Status == "True" && b.Reason == "", "B = %+v", b)
}

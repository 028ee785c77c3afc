package predicates_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/steadyk8s/steady/predicates"
)

func svc(typ corev1.ServiceType, ingress ...string) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", Generation: 1}, Spec: corev1.ServiceSpec{Type: typ}}
	for _, ip := range ingress {
		s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	return s
}

func TestFieldPredicates(t *testing.T) {
	byValue := predicates.Changed(func(o client.Object) any {
		s := o.(*corev1.Service)
		return []any{s.Spec.Type, s.Status.LoadBalancer}
	})
	relabel := svc(corev1.ServiceTypeLoadBalancer)
	relabel.Labels = map[string]string{"a": "b"}
	withFinalizer := svc(corev1.ServiceTypeLoadBalancer)
	withFinalizer.Finalizers = []string{"example.com/ip"}
	for _, tc := range []struct {
		name     string
		old, new *corev1.Service
		want     bool
	}{
		{"type changed", svc(corev1.ServiceTypeClusterIP), svc(corev1.ServiceTypeLoadBalancer), true},
		{"ingress added", svc(corev1.ServiceTypeLoadBalancer), svc(corev1.ServiceTypeLoadBalancer, "10.0.0.1"), true},
		{"ingress removed", svc(corev1.ServiceTypeLoadBalancer, "10.0.0.1"), svc(corev1.ServiceTypeLoadBalancer), true},
		{"only a label", svc(corev1.ServiceTypeLoadBalancer), relabel, false},
		{"nothing", svc(corev1.ServiceTypeLoadBalancer, "10.0.0.1"), svc(corev1.ServiceTypeLoadBalancer, "10.0.0.1"), false},
		{"finalizers changed", svc(corev1.ServiceTypeLoadBalancer), withFinalizer, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}
			if got := byValue.Update(e); got != tc.want {
				t.Errorf("Changed = %v, want %v", got, tc.want)
			}
		})
	}
	if !byValue.Create(event.CreateEvent{Object: svc("")}) || byValue.Create(event.CreateEvent{}) {
		t.Error("creates: every non-nil object passes, nil never")
	}
	// Unstructured objects: the value read from the content; a field that
	// appears is a change.
	u := func(v any) *unstructured.Unstructured {
		o := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
		if v != nil {
			o.Object["spec"].(map[string]any)["type"] = v
		}
		return o
	}
	p := predicates.Changed(func(o client.Object) any {
		v, _, _ := unstructured.NestedFieldNoCopy(o.(*unstructured.Unstructured).Object, "spec", "type")
		return v
	})
	if !p.Update(event.UpdateEvent{ObjectOld: u(nil), ObjectNew: u("LoadBalancer")}) || p.Update(event.UpdateEvent{ObjectOld: u("X"), ObjectNew: u("X")}) {
		t.Error("unstructured: appearing field not a change, or an equal one is")
	}
}

package predicates_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/steadyk8s/steady/predicates"
)

// Unlike predicate.GenerationChangedPredicate, GenerationChanged lets the
// start of a deletion through, so the controller runs its cleanup.
func ExampleGenerationChanged() {
	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Generation: 1, Finalizers: []string{"example.com/cleanup"}}}
	now := metav1.Now()
	deleting := old.DeepCopy()
	deleting.DeletionTimestamp = &now
	e := event.UpdateEvent{ObjectOld: old, ObjectNew: deleting}

	fmt.Println("stock:", predicate.GenerationChangedPredicate{}.Update(e))
	fmt.Println("steady:", predicates.GenerationChanged().Update(e))
	// Output:
	// stock: false
	// steady: true
}

// Name filters apply to every event kind.
func ExampleNames() {
	p := predicates.Names("credentials")
	fmt.Println(p.Create(event.CreateEvent{Object: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "credentials"}}}))
	fmt.Println(p.Create(event.CreateEvent{Object: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other"}}}))
	// Output:
	// true
	// false
}

// A controller of a shared kind reacts to the fields it cares about: a
// Service's type and its load balancer status, not every label change.
func ExampleChanged() {
	p := predicates.Changed(func(o client.Object) any {
		s := o.(*corev1.Service)
		return []any{s.Spec.Type, s.Status.LoadBalancer}
	})
	old := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}}
	relabeled := old.DeepCopy()
	relabeled.Labels = map[string]string{"team": "a"}
	exposed := old.DeepCopy()
	exposed.Spec.Type = corev1.ServiceTypeLoadBalancer
	fmt.Println("label:", p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: relabeled}))
	fmt.Println("type:", p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: exposed}))
	// Output:
	// label: false
	// type: true
}

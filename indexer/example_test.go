package indexer_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/steadyk8s/steady/indexer"
)

// Declare an index once, as a package variable; Values shows what the cache
// will index for an object.
func ExampleNew() {
	podsByNode := indexer.New("spec.nodeName", func(p *corev1.Pod) []string {
		return []string{p.Spec.NodeName}
	})
	pod := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "node-1"}}
	fmt.Println(podsByNode.Name(), podsByNode.Values(pod))
	// Output: spec.nodeName [node-1]
}

// The controller-owner index keys children by their controller's kind and
// name.
func ExampleControllerOwner() {
	idx := indexer.ControllerOwner[*corev1.Pod]()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9", Controller: new(true)},
	}}}
	fmt.Println(idx.Values(pod))
	// Output:
	// [ReplicaSet.apps/web-7d9]
}

// OwnerKey is the value to look an owner's children up by.
func ExampleOwnerKey() {
	fmt.Println(indexer.OwnerKey(schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}, "web-7d9"))
	fmt.Println(indexer.OwnerKey(schema.GroupKind{Kind: "Service"}, "web"))
	// Output:
	// ReplicaSet.apps/web-7d9
	// Service/web
}

// podsByNode is declared once, as a package variable.
var podsByNode = indexer.New("spec.nodeName", func(p *corev1.Pod) []string {
	return []string{p.Spec.NodeName}
})

// Register the index on the manager before it starts (registering it again,
// from another controller, is harmless), then query the manager's cached
// client, or its cache, with the manager's scheme.
func ExampleIndex_Find() {
	ctx := context.Background()
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		return
	}
	if err := podsByNode.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		return
	}
	// ... start the manager; then, in Reconcile:
	pods, err := podsByNode.Find(ctx, mgr.GetClient(), mgr.GetScheme(), "node-1")
	if err != nil {
		return // a *indexer.NotRegisteredError says how to register it
	}
	for _, p := range pods {
		fmt.Println(p.Namespace, p.Name)
	}
}

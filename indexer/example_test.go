package indexer_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
	fmt.Println(indexer.OwnerKey(schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}, "web-7d9"))
	// Output:
	// [ReplicaSet.apps/web-7d9]
	// ReplicaSet.apps/web-7d9
}

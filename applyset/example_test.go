package applyset_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/steadyk8s/steady/applyset"
)

// The set's id is the one kubectl computes for the same parent:
// base64url(sha256("shop-manifests.shop.Secret.")) without padding.
func ExampleID() {
	fmt.Println(applyset.ID(schema.GroupKind{Kind: "Secret"}, "shop", "shop-manifests"))
	// Output: applyset-Nyr3IAAXrFz98NTI-Op855yJQ03yYTZmwIRi3--f_IQ-v1
}

// Apply a set, then apply it again without one object: that object is
// pruned, the rest is left untouched.
func ExampleSet_Apply() {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "example-"}}
	_ = env.Client.Create(ctx, ns)
	parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "shop-manifests"}}
	set, err := applyset.New(env.Client, parent, applyset.FieldManager("shop-operator"))
	if err != nil {
		fmt.Println(err)
		return
	}
	v1, _ := applyset.ParseYAML([]byte(`
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {color: blue}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: legacy}
data: {old: "true"}
`))
	v2 := v1[:1]
	for _, objs := range [][]*unstructured.Unstructured{v1, v2} {
		res, err := set.Apply(ctx, objs)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, o := range res.Objects {
			fmt.Println(o.Action, o.ID.Name)
		}
	}
	// Output:
	// Applied settings
	// Applied legacy
	// Unchanged settings
	// Pruned legacy
}

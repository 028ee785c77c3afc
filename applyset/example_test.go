package applyset_test

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/steadyk8s/steady/applyset"
)

// The set's id is the one kubectl computes for the same parent:
// base64url(sha256("shop-manifests.shop.Secret.")) without padding. New
// asks the client's REST mapper whether the parent is namespaced; a fake
// client that knows Secrets stands for a cluster here.
func ExampleSet_ID() {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Secret"), meta.RESTScopeNamespace)
	c := fake.NewClientBuilder().WithRESTMapper(mapper).Build()
	parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "shop-manifests"}}
	set, err := applyset.New(c, parent)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(set.ID())
	// Output: applyset-Nyr3IAAXrFz98NTI-Op855yJQ03yYTZmwIRi3--f_IQ-v1
}

// ParseYAML reads a multi-document stream; the items of a List are objects
// of their own, and a document that is not an object names itself.
func ExampleParseYAML() {
	objs, err := applyset.ParseYAML([]byte(`
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: shop}, data: {color: blue}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: flags, namespace: shop}}
`))
	fmt.Println(len(objs), err)
	for _, o := range objs {
		fmt.Println(o.GetKind(), o.GetNamespace(), o.GetName())
	}

	_, err = applyset.ParseYAML([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, labels: {tier: 2}}\n"))
	var pe *applyset.ParseError
	fmt.Println(errors.As(err, &pe), pe.Document, pe.Field)
	// Output:
	// 3 <nil>
	// Namespace  shop
	// ConfigMap shop settings
	// ConfigMap shop flags
	// true 0 metadata.labels.tier
}

// A refusal of Apply names each object and field at fault; range over
// ValidationError.Errors for all of them.
func ExampleObjectError() {
	err := error(&applyset.ValidationError{Errors: []error{&applyset.ObjectError{Index: 2,
		ID:    applyset.ObjectID{Namespace: "shop", Name: "web", GroupKind: schema.GroupKind{Kind: "Service"}},
		Field: "metadata.namespace", Err: errors.New("no such namespace")}}})
	var oe *applyset.ObjectError
	if errors.As(err, &oe) {
		fmt.Println(oe.Index, oe.ID, oe.Field)
	}
	fmt.Println(err)
	// Output:
	// 2 Service shop/web metadata.namespace
	// applyset: nothing written, refused: object 2, Service shop/web: field metadata.namespace: no such namespace
}

// An object's identity, as results name it.
func ExampleObjectID_String() {
	id := applyset.ObjectID{Namespace: "shop", Name: "web", GroupKind: schema.GroupKind{Group: "apps", Kind: "Deployment"}}
	fmt.Println(id)
	// Output: Deployment.apps shop/web
}

// Apply a set, then apply it again without one object: that object is
// pruned, the rest is left untouched (and costs no request per object).
// This needs a cluster: ctrl.GetConfig reads the kubeconfig.
func ExampleSet_Apply() {
	ctx := context.Background()
	cfg, err := ctrl.GetConfig()
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "shop-manifests"}}
	set, err := applyset.New(c, parent, applyset.FieldManager("shop-operator"))
	if err != nil {
		fmt.Println(err)
		return
	}
	v1, err := applyset.ParseYAML([]byte(`
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
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, objs := range [][]*unstructured.Unstructured{v1, v1[:1]} {
		res, err := set.Apply(ctx, objs)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, o := range res.Objects {
			fmt.Println(o.Action, o.ID)
		}
	}
}

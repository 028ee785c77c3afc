package crv025

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/steadyk8s/steady/applyset"
)

const manifests = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: doodads.as.steady.dev}
spec:
  group: as.steady.dev
  scope: Namespaced
  names: {kind: Doodad, listKind: DoodadList, plural: doodads, singular: doodad}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
`

// TestPruneACRDWithoutApiextensionsInTheScheme: on controller-runtime
// v0.25.2, pruning a CRD with a client whose scheme lacks apiextensions
// failed with `no kind "CustomResourceDefinition" is registered`.
func TestPruneACRDWithoutApiextensionsInTheScheme(t *testing.T) {
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil { // no apiextensions
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	set, err := applyset.New(c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "set"}})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := applyset.ParseYAML([]byte(manifests))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := set.Apply(ctx, objs); err != nil {
		t.Fatal(err)
	}
	res, err := set.Apply(ctx, objs[1:])
	if err != nil || res.Count(applyset.Pruned) != 1 {
		t.Fatalf("prune of the CRD: %+v, %v", res.Objects, err)
	}
}

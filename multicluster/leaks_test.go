package multicluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/reconcile"
	"github.com/steadyk8s/steady/testenv"
)

// gadgetCRD is a namespaced kind whose status is a subresource or not.
func gadgetCRD(statusSubresource bool) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.fleet.steady.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "fleet.steady.dev",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
	if statusSubresource {
		crd.Spec.Versions[0].Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	}
	return crd
}

func gadget(ns, name, phase string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("fleet.steady.dev/v1")
	u.SetKind("Gadget")
	u.SetNamespace(ns)
	u.SetName(name)
	_ = unstructured.SetNestedField(u.Object, "one", "spec", "size")
	if phase != "" {
		_ = unstructured.SetNestedField(u.Object, phase, "status", "phase")
	}
	return u
}

// TestStatusSubresourceLearnedPerCluster: the same kind has a status
// subresource in cluster a and none in cluster b (a CRD upgrade rolling
// through the fleet). What CreateOrUpdate learns of the kind in a must not
// make it drop a status change in b, where the status is part of the
// object. ownership keeps what it learned per cluster and kind
// (ownership/status.go, subresources).
func TestStatusSubresourceLearnedPerCluster(t *testing.T) {
	fleet.Require(t)
	ctx := context.Background()
	a, b := fleet.Members[0], fleet.Members[1]
	for i, e := range []*testenv.Environment{a, b} {
		if err := e.InstallCRDs(ctx, gadgetCRD(i == 0)); err != nil {
			t.Fatal(err)
		}
	}
	ns := fmt.Sprintf("subresource-%d", seq.Add(1))
	owners := ownersIn(t, ns, nil)
	want := func(e *testenv.Environment, owner client.Object, phase string) error {
		g := gadget(ns, "g", "")
		_, err := ownership.CreateOrUpdate(ctx, e.Client, owner, g, func() error {
			return unstructured.SetNestedField(g.Object, phase, "status", "phase")
		})
		return err
	}
	phaseIn := func(e *testenv.Environment) string {
		g := gadget(ns, "g", "")
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(g), g); err != nil {
			t.Fatal(err)
		}
		p, _, _ := unstructured.NestedString(g.Object, "status", "phase")
		return p
	}
	// b first: its status is written, and ownership learns that its kind
	// has no subresource.
	if err := want(b, owners[1], "one"); err != nil {
		t.Fatal(err)
	}
	if got := phaseIn(b); got != "one" {
		t.Fatalf("cluster b: phase %q, want one", got)
	}
	// a: a status change its update cannot write; ownership learns that
	// the kind has a subresource (there).
	if err := want(a, owners[0], "one"); err != nil {
		t.Fatal(err)
	}
	g := gadget(ns, "g", "")
	if err := a.Client.Get(ctx, client.ObjectKeyFromObject(g), g); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(g.Object, "old", "status", "phase")
	if err := a.Client.Status().Update(ctx, g); err != nil {
		t.Fatal(err)
	}
	if err := want(a, owners[0], "two"); err != nil {
		t.Fatal(err)
	}
	// b again: its status change must be written.
	if err := want(b, owners[1], "two"); err != nil {
		t.Fatal(err)
	}
	if got := phaseIn(b); got != "two" {
		t.Errorf("cluster b: phase %q, want two: what ownership learned of the kind in cluster a dropped the write in b", got)
	}
}

// TestClonedClustersDoNotShareTheLedger: two clusters made from one
// snapshot (a cloned etcd, a restored backup) hold objects of the same
// UID. A write reconcile.For made in cluster a must not make For in
// cluster b wait for a resourceVersion only a has: each For's ledger of
// own writes is its cluster's (its client's State), not the process's.
func TestClonedClustersDoNotShareTheLedger(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	clone := func() client.Client {
		return fake.NewClientBuilder().WithScheme(scheme).WithObjects(&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x", UID: "uid-of-the-snapshot"}}).Build()
	}
	ca, cb := clone(), clone()
	var ran [2]int
	build := func(i int, c client.Client) func(context.Context, ctrl.Request) (ctrl.Result, error) {
		r, err := reconcile.For[corev1.ConfigMap](c, func(_ context.Context, cm *corev1.ConfigMap) (ctrl.Result, error) {
			ran[i]++
			cm.Data = map[string]string{"n": fmt.Sprint(ran[i])}
			return ctrl.Result{}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return r.Reconcile
	}
	req := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "default", Name: "x"}}
	ra, rb := build(0, ca), build(1, cb)
	for range 3 { // cluster a moves ahead
		if _, err := ra(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	res, err := rb(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if ran[1] != 1 {
		t.Errorf("cluster b: the body did not run (result %+v after %s): cluster a's writes of the same UID made b's object look like a cache behind its own write", res, time.Since(start).Round(time.Millisecond))
	}
}

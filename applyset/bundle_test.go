package applyset_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/applyset"
)

// bundleCRD defines Gizmo with a structural schema: a field it does not
// declare is refused by server-side apply.
func bundleCRD(withColor bool) string {
	color := ""
	if withColor {
		color = "              color: {type: string}\n"
	}
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.bundle.steady.dev}
spec:
  group: bundle.steady.dev
  scope: Namespaced
  names: {kind: Gizmo, listKind: GizmoList, plural: gizmos, singular: gizmo}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
` + color + "---\n"
}

func inNS(ns, doc string) string {
	return strings.Replace(doc, "metadata:\n  name: ", "metadata:\n  namespace: "+ns+"\n  name: ", 1)
}

func gizmo(ns, spec string) string {
	return fmt.Sprintf("apiVersion: bundle.steady.dev/v1\nkind: Gizmo\nmetadata: {name: g, namespace: %s}\nspec: %s\n---\n", ns, spec)
}

// TestBundleOfANamespaceACRDAndTheirObjects applies the most common bundle,
// a Namespace with the objects that live in it, a CRD and a custom resource
// of it, with the parent elsewhere; changes it (the CRD gains a field the
// custom resource uses); and prunes it back to nothing.
func TestBundleOfANamespaceACRDAndTheirObjects(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	home := env.Namespace(t)
	bns := home + "-bundle"
	parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: home, Name: "bundle"}}
	set, err := applyset.New(c, parent)
	if err != nil {
		t.Fatal(err)
	}
	namespace := "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + bns + "}\n---\n"
	v1 := parse(t, gizmo(bns, "{size: 1}")+inNS(bns, cm("a"))+inNS(bns, cm("b"))+namespace+bundleCRD(false))
	res, err := set.Apply(ctx, v1)
	if err != nil || res.Count(applyset.Applied) != 5 {
		t.Fatalf("first apply: %+v, %v", res, err)
	}
	g := &unstructured.Unstructured{}
	g.SetGroupVersionKind(schema.GroupVersionKind{Group: "bundle.steady.dev", Version: "v1", Kind: "Gizmo"})
	g.SetNamespace(bns)
	g.SetName("g")
	if !exists(t, g) || !exists(t, configMap(bns, "a")) {
		t.Fatal("bundle members missing")
	}

	// The CRD gains a field and the custom resource uses it.
	v2 := parse(t, gizmo(bns, "{size: 1, color: red}")+inNS(bns, cm("a"))+inNS(bns, cm("b"))+namespace+bundleCRD(true))
	res, err = set.Apply(ctx, v2)
	if err != nil || res.Count(applyset.Applied) != 2 || res.Count(applyset.Unchanged) != 3 {
		t.Fatalf("apply with a new CRD field: %+v, %v", res, err)
	}
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(g), g)
	if color, _, _ := unstructured.NestedString(g.Object, "spec", "color"); color != "red" {
		t.Errorf("spec.color = %q", color)
	}

	// Unchanged: no write, and no request per object.
	n.Reset()
	res, err = set.Apply(ctx, v2)
	if err != nil || res.Count(applyset.Unchanged) != 5 {
		t.Fatalf("re-apply: %+v, %v", res, err)
	}
	if n.Writes() != 0 || n.Get("DRYRUN-PATCH") != 0 {
		t.Errorf("unchanged re-apply: %s", n)
	}

	res, err = set.Apply(ctx, nil)
	if err != nil || res.Count(applyset.Pruned) != 5 {
		t.Fatalf("prune to nothing: %+v, %v", res.Objects, err)
	}
	var order []string
	for _, o := range res.Objects {
		order = append(order, o.ID.GroupKind.Kind)
	}
	if got := strings.Join(order[len(order)-2:], ","); got != "Namespace,CustomResourceDefinition" {
		t.Errorf("prune order %v", order)
	}
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(parent), parent)
	if parent.Annotations[applyset.GroupKindsAnnotation] != "" || parent.Annotations[applyset.NamespacesAnnotation] != "" {
		t.Errorf("parent after pruning everything: %v", parent.Annotations)
	}
	for _, o := range []client.Object{g, configMap(bns, "a"), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bns}}} {
		if exists(t, o) {
			t.Errorf("%s %s not pruned", o.GetObjectKind().GroupVersionKind().Kind, o.GetName())
		}
	}
}

// TestRefusalAfterAWriteSaysWhatWasWritten: a member of a Namespace the set
// creates can only be dry-run once the Namespace exists; when it is refused
// then, the error names what was written.
func TestRefusalAfterAWriteSaysWhatWasWritten(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	home := env.Namespace(t)
	bns := home + "-refused"
	set, _ := applyset.New(env.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: home, Name: "set"}})
	bad := "apiVersion: v1\nkind: Service\nmetadata: {name: bad, namespace: " + bns + "}\nspec: {ports: [{port: 99999}]}\n---\n"
	_, err := set.Apply(ctx, parse(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+bns+"}\n---\n"+bad))
	var ve *applyset.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("apply: %v", err)
	}
	want := []string{"Secret " + home + "/set", "Namespace " + bns}
	if strings.Join(ve.Written, ",") != strings.Join(want, ",") || strings.Contains(err.Error(), "nothing") ||
		!strings.Contains(err.Error(), "written before the refusal: "+strings.Join(want, ", ")) {
		t.Errorf("error %q, Written %v, want %v", err, ve.Written, want)
	}
}

// TestMetadataMustHoldStrings: a label "tier: 2" is refused, by ParseYAML and
// by Apply, instead of dropping every other label.
func TestMetadataMustHoldStrings(t *testing.T) {
	env.Require(t)
	for _, tc := range []struct{ yaml, field string }{
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {app: web, tier: 2}}\n", "metadata.labels.tier"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, annotations: {enabled: true}}\n", "metadata.annotations.enabled"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: 3}\n", "metadata.namespace"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, finalizers: [1]}\n", "metadata.finalizers[0]"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 7}\n", "metadata.name"},
	} {
		_, err := applyset.ParseYAML([]byte(tc.yaml))
		var pe *applyset.ParseError
		if !errors.As(err, &pe) || pe.Field != tc.field {
			t.Errorf("ParseYAML(%q) = %v, want field %s", tc.yaml, err, tc.field)
		}
	}
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	set, _ := applyset.New(c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}})
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "a", "labels": map[string]any{"app": "web", "tier": int64(2)}}}}
	n.Reset()
	_, err := set.Apply(ctx, []*unstructured.Unstructured{u})
	var ve *applyset.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "metadata.labels.tier") || n.Writes() != 0 {
		t.Errorf("Apply with a label tier: 2: %v (%s)", err, n)
	}
}

// TestListItemsAreCheckedLikeDocuments.
func TestListItemsAreCheckedLikeDocuments(t *testing.T) {
	for _, tc := range []struct{ yaml, field string }{
		{"apiVersion: v1\nkind: List\nitems: [3]\n", "items[0]"},
		{"apiVersion: v1\nkind: List\nitems:\n- {kind: ConfigMap, metadata: {name: x}}\n", "items[0].apiVersion"},
		{"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n- {apiVersion: v1, metadata: {name: y}}\n", "items[1].kind"},
		{"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: x, labels: {rank: 1}}}\n", "items[0].metadata.labels.rank"},
	} {
		_, err := applyset.ParseYAML([]byte(cm("first") + tc.yaml))
		var pe *applyset.ParseError
		if !errors.As(err, &pe) || pe.Field != tc.field || pe.Document != 1 {
			t.Errorf("ParseYAML(%q) = %v, want document 1 field %s", tc.yaml, err, tc.field)
		}
	}
	objs, err := applyset.ParseYAML([]byte("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n"))
	if err != nil || len(objs) != 1 || objs[0].GetName() != "x" {
		t.Errorf("a good List: %v, %v", objs, err)
	}
}

// TestUnrelatedParentIsRefused: an existing Secret that is not a parent is
// not silently turned into one.
func TestUnrelatedParentIsRefused(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-password", Labels: map[string]string{"app": "db"}},
		StringData: map[string]string{"password": "hunter2"}}
	if err := env.Client.Create(ctx, parent); err != nil {
		t.Fatal(err)
	}
	set, _ := applyset.New(c, parent)
	n.Reset()
	_, err := set.Apply(ctx, parse(t, cm("a")))
	var te *applyset.ToolingError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "missing the annotation "+applyset.ToolingAnnotation) || n.Writes() != 0 {
		t.Fatalf("apply to an unrelated Secret: %v (%s)", err, n)
	}
	adopt, _ := applyset.New(c, parent, applyset.Adopt{})
	if _, err := adopt.Apply(ctx, parse(t, cm("a"))); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Secret{}
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(parent), got)
	if string(got.Data["password"]) != "hunter2" || got.Labels["app"] != "db" || got.Labels[applyset.IDLabel] != set.ID() {
		t.Errorf("adopted parent: %v %v", got.Labels, got.Data)
	}
}

// TestPruneSparesWhatMembersNeed: a Namespace or CRD dropped from the set
// while members (or the parent) still live in it or are of its kind is not
// deleted, which would delete them too; it is Skipped and stays a member.
func TestPruneSparesWhatMembersNeed(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	home := env.Namespace(t)
	bns := home + "-spare"
	parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: home, Name: "bundle"}}
	set, _ := applyset.New(env.Client, parent)
	namespace := "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + bns + "}\n---\n"
	homeNS := "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + home + "}\n---\n"
	crd := strings.NewReplacer("gizmos", "gadgetos", "Gizmo", "Gadgeto", "gizmo", "gadgeto").Replace(bundleCRD(false))
	gadgeto := strings.NewReplacer("Gizmo", "Gadgeto").Replace(gizmo(bns, "{size: 1}"))
	if _, err := set.Apply(ctx, parse(t, namespace+homeNS+crd+gadgeto+inNS(bns, cm("a")))); err != nil {
		t.Fatal(err)
	}
	res, err := set.Apply(ctx, parse(t, gadgeto+inNS(bns, cm("a"))))
	if res.Count(applyset.Pruned) != 0 {
		t.Errorf("pruned what members need: %+v, %v", res.Objects, err)
	}
	for _, o := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bns}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: home}}, crdObject("gadgetos.bundle.steady.dev")} {
		if !exists(t, o) {
			t.Errorf("%s deleted although members need it", o.GetName())
		}
	}
	if got := parentKinds(t, parent); !strings.Contains(got, "Namespace") || !strings.Contains(got, "CustomResourceDefinition") {
		t.Errorf("parent kinds = %q: the spared objects are forgotten", got)
	}
}

// TestMappingFailureAfterACRDIsNotARefusal: a member whose kind a CRD of the
// set defines, and whose mapping then fails because discovery fails (a
// 503), is no *ValidationError: the input is not at fault.
func TestMappingFailureAfterACRDIsNotARefusal(t *testing.T) {
	env.Require(t)
	ns := env.Namespace(t)
	gv := schema.GroupVersion{Group: "flaky.steady.dev", Version: "v1"}
	mapErr := &apiutil.ErrResourceDiscoveryFailed{gv: apierrors.NewServiceUnavailable("overloaded")}
	c, err := client.New(env.Config, client.Options{Scheme: env.Scheme, Mapper: failingMapper{env.Client.RESTMapper(), gv.Group, mapErr}})
	if err != nil {
		t.Fatal(err)
	}
	set, _ := applyset.New(c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}}, applyset.EstablishTimeout(time.Second))
	crd := strings.NewReplacer("bundle.steady.dev", "flaky.steady.dev").Replace(bundleCRD(false))
	g := strings.NewReplacer("bundle.steady.dev", "flaky.steady.dev").Replace(gizmo(ns, "{size: 1}"))
	_, err = set.Apply(context.Background(), parse(t, crd+g))
	var invalid *applyset.ValidationError
	if err == nil || errors.As(err, &invalid) || !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("apply while the CRD's group discovery fails: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), crdObject("gizmos.flaky.steady.dev")) })
}

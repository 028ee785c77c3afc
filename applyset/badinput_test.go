package applyset_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/applyset"
)

// biCRD defines a kind of the group bi.steady.dev. A listKind already used
// by another CRD of the group makes the API server refuse its names
// (NamesAccepted False): it is never established.
func biCRD(plural, kind, listKind string) string {
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: ` + plural + `.bi.steady.dev}
spec:
  group: bi.steady.dev
  scope: Namespaced
  names: {kind: ` + kind + `, listKind: ` + listKind + `, plural: ` + plural + `}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
`
}

// TestParseBadInput: a stream that is no list of Kubernetes objects is a
// *ParseError naming the document and the field.
func TestParseBadInput(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, field string
		doc               int
	}{
		{"YAML syntax error", cm("a") + "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b\n", "", 1},
		{"no kind", cm("a") + "apiVersion: v1\nmetadata: {name: b}\n", "kind", 1},
		{"no apiVersion", "kind: ConfigMap\nmetadata: {name: b}\n", "apiVersion", 0},
		{"no name", cm("a") + cm("b") + "apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: x}\n", "metadata.name", 2},
		{"kind not a string", "apiVersion: v1\nkind: [ConfigMap]\nmetadata: {name: b}\n", "kind", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := applyset.ParseYAML([]byte(tc.yaml))
			var pe *applyset.ParseError
			if !errors.As(err, &pe) || pe.Document != tc.doc || pe.Field != tc.field || objs != nil {
				t.Fatalf("ParseYAML = %d objects, %v; want a *ParseError of document %d, field %q", len(objs), err, tc.doc, tc.field)
			}
			if !strings.Contains(err.Error(), "input document ") || tc.field != "" && !strings.Contains(err.Error(), "field "+tc.field) {
				t.Errorf("message %q names neither the document nor the field", err)
			}
		})
	}
}

// TestApplyBadInput feeds Apply input it must refuse, on a set that already
// holds a member "keep": each case is a *ValidationError whose Errors are
// *applyset.ObjectError naming the object (index, "Kind namespace/name")
// and the field, and the API server shows that nothing was written but
// what Written lists: no member created, the parent untouched, nothing
// pruned.
func TestApplyBadInput(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	// alphas is served; betas clashes with its listKind and is never
	// established.
	for _, doc := range []string{biCRD("alphas", "Alpha", "AlphaList"), biCRD("betas", "Beta", "AlphaList")} {
		crd := parse(t, doc)[0]
		if err := env.Client.Create(ctx, crd); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { deleteCRD(t, crd.GetName()) })
	}
	waitNamesRefused(t, "betas.bi.steady.dev")

	for _, tc := range []struct {
		name string
		// input is the manifests, with NS for the test's namespace.
		input string
		objs  []*unstructured.Unstructured // instead of input
		opts  []applyset.SetOption
		// index, object and field of the first ObjectError.
		index         int
		object, field string
		written       []string // "Kind NS/name", in order
	}{
		{name: "object without a name", objs: []*unstructured.Unstructured{
			{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"namespace": "NS"}}}},
			object: "ConfigMap NS/", field: "metadata.name"},
		{name: "object without kind", objs: []*unstructured.Unstructured{
			{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}}},
			{Object: map[string]any{"apiVersion": "v1", "metadata": map[string]any{"name": "b"}}}},
			index: 1, object: "object 1,  b", field: "kind"}, // as the input names it
		{name: "nil object", objs: []*unstructured.Unstructured{nil}, object: "object 0: nil"},
		{name: "duplicate object", input: cm("a") + cm("b") + cm("a"), index: 2, object: "ConfigMap NS/a: appears twice (also object 0)"},
		{name: "unknown kind", input: cm("a") + "apiVersion: nothing.steady.dev/v1\nkind: Nothing\nmetadata: {name: nope}\n",
			index: 1, object: "Nothing.nothing.steady.dev nope", field: "kind"},
		{name: "unknown version", input: "apiVersion: v7\nkind: ConfigMap\nmetadata: {name: a}\n", object: "ConfigMap a", field: "apiVersion"},
		{name: "kind of a CRD not established", input: cm("a") + "apiVersion: bi.steady.dev/v1\nkind: Beta\nmetadata: {name: b}\n",
			index: 1, object: "Beta.bi.steady.dev b", field: "kind"},
		{name: "cluster-scoped kind with a namespace", input: "apiVersion: v1\nkind: Namespace\nmetadata: {name: NS-x, namespace: NS}\n",
			object: "Namespace NS/NS-x", field: "metadata.namespace"},
		{name: "invalid value", input: cm("a") + "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 99999}]}\n",
			index: 1, object: "Service NS/s", field: "spec.ports[0].port"},
		{name: "namespace that does not exist", input: inNS("NS-none", cm("a")), object: "ConfigMap NS-none/a", field: "metadata.namespace"},
		{name: "member in a terminating namespace", input: cm("a") + inNS("NS-term", cm("b")),
			index: 1, object: "ConfigMap NS-term/b", field: "metadata.namespace"},
		{name: "terminating namespace in the set", input: "apiVersion: v1\nkind: Namespace\nmetadata: {name: NS-term}\n---\n" + inNS("NS-term", cm("b")),
			object: "Namespace NS-term", field: "metadata.deletionTimestamp"},
		// The CRD must be written before what it defines can be checked:
		// Written says so, and the CR is not created.
		{name: "CRD that cannot be established, with its CR", input: biCRD("gammas", "Gamma", "AlphaList") + cm("a") +
			"apiVersion: bi.steady.dev/v1\nkind: Gamma\nmetadata: {name: g}\n",
			opts:   []applyset.SetOption{applyset.EstablishTimeout(2 * time.Second)},
			object: "CustomResourceDefinition.apiextensions.k8s.io gammas.bi.steady.dev", field: "spec.names",
			written: []string{"Secret NS/set", "CustomResourceDefinition.apiextensions.k8s.io gammas.bi.steady.dev"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			fill := func(s string) string { return strings.ReplaceAll(s, "NS", ns) }
			terminating(t, ns+"-term")
			c, n := counting(t)
			parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}}
			set, err := applyset.New(c, parent, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := set.Apply(ctx, parse(t, cm("keep"))); err != nil {
				t.Fatal(err)
			}
			before := &corev1.Secret{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(parent), before); err != nil {
				t.Fatal(err)
			}
			objs := tc.objs
			if objs == nil {
				objs = parse(t, fill(tc.input))
			}
			for _, o := range objs {
				if o != nil && o.GetNamespace() == "NS" {
					o.SetNamespace(ns)
				}
			}
			if strings.Contains(tc.name, "CRD") {
				t.Cleanup(func() { deleteCRD(t, "gammas.bi.steady.dev") })
			}
			n.Reset()
			res, err := set.Apply(ctx, objs)

			var ve *applyset.ValidationError
			var oe *applyset.ObjectError
			if !errors.As(err, &ve) || !errors.As(err, &oe) {
				t.Fatalf("Apply = %v (%T); want a *ValidationError of *ObjectError", err, err)
			}
			t.Logf("%v", err)
			if oe.Index != tc.index || oe.Field != tc.field || !strings.Contains(oe.Error(), fill(tc.object)) {
				t.Errorf("ObjectError index %d, field %q, %q; want index %d, field %q, naming %q", oe.Index, oe.Field, oe, tc.index, tc.field, fill(tc.object))
			}
			if tc.field != "" && !strings.Contains(err.Error(), tc.field) {
				t.Errorf("the message does not name the field %s: %v", tc.field, err)
			}
			for _, e := range ve.Errors {
				if !errors.As(e, new(*applyset.ObjectError)) {
					t.Errorf("an untyped refusal: %v", e)
				}
			}
			want := make([]string, len(tc.written))
			for i, w := range tc.written {
				want[i] = fill(w)
			}
			if !slices.Equal(ve.Written, want) || len(want) == 0 && (n.Writes() != 0 || !strings.Contains(err.Error(), "nothing written")) {
				t.Errorf("Written %v, want %v (requests %s)", ve.Written, want, n)
			}
			for _, o := range res.Objects {
				if o.Action == applyset.Applied && !slices.Contains(want, o.Object) || o.Action == applyset.Pruned {
					t.Errorf("result says %s %s", o.Action, o.Object)
				}
			}
			// Nothing but what Written lists: no member created or pruned,
			// the parent unchanged when not listed.
			members := &unstructured.UnstructuredList{}
			members.SetAPIVersion("v1")
			members.SetKind("ConfigMapList")
			if err := env.Client.List(ctx, members, client.HasLabels{applyset.PartOfLabel}); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, m := range members.Items {
				if strings.HasPrefix(m.GetNamespace(), ns) {
					names = append(names, m.GetNamespace()+"/"+m.GetName())
				}
			}
			if !slices.Equal(names, []string{ns + "/keep"}) {
				t.Errorf("members live after the refusal: %v, want only %s/keep", names, ns)
			}
			for _, o := range []client.Object{
				&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"}},
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns + "-x"}},
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns + "-none"}},
			} {
				if exists(t, o) {
					t.Errorf("%T %s created", o, o.GetName())
				}
			}
			g := &unstructured.Unstructured{}
			g.SetAPIVersion("bi.steady.dev/v1")
			g.SetKind("Gamma")
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "g"}, g); err == nil {
				t.Error("the Gamma of a CRD not established was created")
			}
			term := &corev1.Namespace{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: ns + "-term"}, term); err != nil || term.Labels[applyset.PartOfLabel] != "" {
				t.Errorf("terminating namespace labelled: %v, %v", term.Labels, err)
			}
			after := &corev1.Secret{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(parent), after); err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 && after.ResourceVersion != before.ResourceVersion {
				t.Errorf("parent written: %v", after.Annotations)
			}
			// The set is whole: the good input applies, and what was
			// written is pruned.
			res, err = set.Apply(ctx, parse(t, cm("keep")))
			if err != nil || res.Count(applyset.Pruned) != len(want[min(1, len(want)):]) {
				t.Errorf("the good input after the refusal: %+v, %v", res.Objects, err)
			}
		})
	}
}

// terminating makes a namespace that is being deleted: without a namespace
// controller (applyset's environment runs none) it stays so.
func terminating(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ns), ns); err != nil || ns.DeletionTimestamp == nil {
		t.Fatalf("namespace %s not terminating: %v", name, err)
	}
}

// waitNamesRefused waits until the API server refuses the names of a CRD.
func waitNamesRefused(t *testing.T, name string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		crd := crdObject(name)
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(crd), crd)
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "NamesAccepted" && m["status"] == "False" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("CRD %s: names not refused: %v", name, conds)
		}
	}
}

// deleteCRD deletes a CRD and waits until it is gone, so that the test can
// run again (go test -count).
func deleteCRD(t *testing.T, name string) {
	ctx := context.Background()
	if err := env.Client.Delete(ctx, crdObject(name)); err != nil && !apierrors.IsNotFound(err) {
		t.Error(err)
	}
	for deadline := time.Now().Add(30 * time.Second); !apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Name: name}, crdObject(name))); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("CRD %s not deleted", name)
			return
		}
	}
}

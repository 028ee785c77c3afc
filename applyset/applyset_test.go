package applyset_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/steadyk8s/steady/applyset"
	"github.com/steadyk8s/steady/internal/testapi"
)

var env = testapi.NewEnv()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

func parse(t *testing.T, yaml string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := applyset.ParseYAML([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func cm(name string, extra ...string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n%sdata: {k: v}\n---\n", name, strings.Join(extra, ""))
}

func secret(name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\nstringData: {k: v}\n---\n", name)
}

func counting(t *testing.T) (client.Client, *testapi.Counter) {
	t.Helper()
	c, n, err := testapi.NewCountingClient(env.Config, env.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	return c, n
}

func exists(t *testing.T, obj client.Object) bool {
	t.Helper()
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return obj.GetDeletionTimestamp() == nil
}

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func TestApplyReapplyPrune(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop-set"}}
	set, err := applyset.New(c, parent, applyset.FieldManager("shop"))
	if err != nil {
		t.Fatal(err)
	}
	if want := applyset.ID(schema.GroupKind{Kind: "Secret"}, ns, "shop-set"); set.ID() != want || !strings.HasPrefix(want, "applyset-") {
		t.Fatalf("ID = %s", set.ID())
	}

	res, err := set.Apply(ctx, parse(t, cm("a")+cm("b")+secret("c")))
	if err != nil || res.Count(applyset.Applied) != 3 {
		t.Fatalf("first apply: %+v, %v", res, err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(parent), parent); err != nil {
		t.Fatal(err)
	}
	if parent.Labels[applyset.IDLabel] != set.ID() || parent.Annotations[applyset.ToolingAnnotation] != applyset.DefaultTooling ||
		parent.Annotations[applyset.GroupKindsAnnotation] != "ConfigMap,Secret" || parent.Annotations[applyset.NamespacesAnnotation] != "" {
		t.Errorf("parent metadata: %v %v", parent.Labels, parent.Annotations)
	}
	a := configMap(ns, "a")
	if !exists(t, a) || a.Labels[applyset.PartOfLabel] != set.ID() {
		t.Fatalf("member a: %v", a.Labels)
	}

	n.Reset()
	res, err = set.Apply(ctx, parse(t, cm("a")+cm("b")+secret("c")))
	if err != nil || res.Count(applyset.Unchanged) != 3 || len(res.Objects) != 3 {
		t.Fatalf("re-apply: %+v, %v", res, err)
	}
	if n.Writes() != 0 {
		t.Errorf("re-apply with no change wrote: %s", n)
	}

	res, err = set.Apply(ctx, parse(t, cm("a")+secret("c")))
	if err != nil || res.Count(applyset.Pruned) != 1 || exists(t, configMap(ns, "b")) || !exists(t, configMap(ns, "a")) {
		t.Fatalf("prune of b: %+v, %v", res, err)
	}
	res, err = set.Apply(ctx, parse(t, cm("a")))
	if err != nil || res.Count(applyset.Pruned) != 1 {
		t.Fatalf("prune of c: %+v, %v", res, err)
	}
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(parent), parent)
	if got := parent.Annotations[applyset.GroupKindsAnnotation]; got != "ConfigMap" {
		t.Errorf("group kinds after the last Secret went: %q", got)
	}
}

func TestPruneSafety(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	set, err := applyset.New(env.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}})
	if err != nil {
		t.Fatal(err)
	}
	keep := "  annotations: {cli-utils.sigs.k8s.io/on-remove: keep}\n"
	detach := "  annotations: {client.lifecycle.config.k8s.io/deletion: detach}\n"
	if _, err := set.Apply(ctx, parse(t, cm("plain")+cm("kept", keep)+cm("detached", detach))); err != nil {
		t.Fatal(err)
	}
	// Not ours: another set's member and an unlabelled object.
	other := configMap(ns, "others")
	other.Labels = map[string]string{applyset.PartOfLabel: "applyset-someone-else-v1"}
	bystander := configMap(ns, "bystander")
	for _, o := range []client.Object{other, bystander} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	res, err := set.Apply(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Count(applyset.Pruned) != 1 || res.Count(applyset.Detached) != 2 {
		t.Errorf("result: %+v", res.Objects)
	}
	if exists(t, configMap(ns, "plain")) {
		t.Error("plain member not pruned")
	}
	for _, name := range []string{"kept", "detached", "others", "bystander"} {
		o := configMap(ns, name)
		if !exists(t, o) {
			t.Errorf("%s was deleted", name)
		}
		if (name == "kept" || name == "detached") && o.Labels[applyset.PartOfLabel] != "" {
			t.Errorf("%s is still labelled part of the set", name)
		}
	}
}

func TestParentOfAnotherToolIsRefused(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set",
		Annotations: map[string]string{applyset.ToolingAnnotation: "kubectl/v1.36.3"}}}
	if err := env.Client.Create(ctx, parent); err != nil {
		t.Fatal(err)
	}
	set, _ := applyset.New(c, parent)
	n.Reset()
	_, err := set.Apply(ctx, parse(t, cm("a")))
	var te *applyset.ToolingError
	if !errors.As(err, &te) || n.Writes() != 0 {
		t.Fatalf("apply to kubectl's parent: %v (requests %s)", err, n)
	}
	adopting, _ := applyset.New(c, parent, applyset.Adopt{})
	if _, err := adopting.Apply(ctx, parse(t, cm("a"))); err != nil {
		t.Fatal(err)
	}
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(parent), parent)
	if parent.Annotations[applyset.ToolingAnnotation] != applyset.DefaultTooling {
		t.Errorf("tooling after adoption: %s", parent.Annotations[applyset.ToolingAnnotation])
	}
}

func TestBadManifestChangesNothing(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	set, _ := applyset.New(c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}})
	bad := "apiVersion: v1\nkind: Service\nmetadata: {name: bad}\nspec: {ports: [{port: 99999}]}\n"
	n.Reset()
	_, err := set.Apply(ctx, parse(t, cm("good")+bad))
	var ve *applyset.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "Service "+ns+"/bad") {
		t.Fatalf("apply with a bad object: %v", err)
	}
	if n.Writes() != 0 || exists(t, configMap(ns, "good")) || exists(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}}) {
		t.Errorf("a refused set wrote: %s", n)
	}
}

const crdYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.as.steady.dev}
spec:
  group: as.steady.dev
  scope: Namespaced
  names: {kind: Gadget, listKind: GadgetList, plural: gadgets, singular: gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
`

func TestCRDAndItsResourcesInOneSet(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	set, _ := applyset.New(env.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}})
	gadget := "apiVersion: as.steady.dev/v1\nkind: Gadget\nmetadata: {name: g1}\nspec: {size: 1}\n---\n"
	res, err := set.Apply(ctx, parse(t, gadget+crdYAML+cm("a")))
	if err != nil || res.Count(applyset.Applied) != 3 {
		t.Fatalf("apply: %+v, %v", res, err)
	}
	if res.Objects[0].Object != "CustomResourceDefinition.apiextensions.k8s.io gadgets.as.steady.dev" {
		t.Errorf("the CRD was not applied first: %+v", res.Objects)
	}
	g := &unstructured.Unstructured{}
	g.SetGroupVersionKind(schema.GroupVersionKind{Group: "as.steady.dev", Version: "v1", Kind: "Gadget"})
	g.SetNamespace(ns)
	g.SetName("g1")
	if !exists(t, g) {
		t.Fatal("gadget not created")
	}
	res, err = set.Apply(ctx, parse(t, cm("a")))
	if err != nil || res.Count(applyset.Pruned) != 2 {
		t.Fatalf("prune: %+v, %v", res.Objects, err)
	}
	var order []string
	for _, o := range res.Objects {
		if o.Action == applyset.Pruned {
			order = append(order, o.Object)
		}
	}
	if !strings.HasPrefix(order[0], "Gadget") {
		t.Errorf("prune order %v: the custom resource must go before its CRD", order)
	}

	// A group-kind whose CRD is gone is skipped, not a failure.
	set2, _ := applyset.New(env.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set2"}})
	if _, err := set2.Apply(ctx, parse(t, strings.Replace(strings.Replace(crdYAML, "gadgets", "widgetz", -1), "Gadget", "Widgetz", -1)+
		"apiVersion: as.steady.dev/v1\nkind: Widgetz\nmetadata: {name: w1}\n")); err != nil {
		t.Fatal(err)
	}
	crd := crdObject("widgetz.as.steady.dev")
	if err := env.Client.Delete(ctx, crd); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); !apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(crd), crdObject(crd.GetName()))); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("CRD not deleted")
		}
	}
	res, err = set2.Apply(ctx, nil)
	if err != nil || res.Count(applyset.Skipped) != 1 {
		t.Fatalf("prune with a CRD gone: %+v, %v", res.Objects, err)
	}
}

func crdObject(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	u.SetName(name)
	return u
}

// TestClusterScopedParent uses a cluster-scoped custom resource as parent:
// its CRD must be labelled as a parent type, and its namespaced members need
// a namespace.
func TestClusterScopedParent(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	crd := parse(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: bundles.as.steady.dev}
spec:
  group: as.steady.dev
  scope: Cluster
  names: {kind: Bundle, listKind: BundleList, plural: bundles, singular: bundle}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
`)[0]
	if err := env.Client.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	parent := &unstructured.Unstructured{}
	parent.SetGroupVersionKind(schema.GroupVersionKind{Group: "as.steady.dev", Version: "v1", Kind: "Bundle"})
	parent.SetName("bundle-" + ns)
	deadline := time.Now().Add(30 * time.Second)
	for err := env.Client.Create(ctx, parent.DeepCopy()); err != nil; err = env.Client.Create(ctx, parent.DeepCopy()) {
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var set *applyset.Set
	for set == nil {
		s, err := applyset.New(env.Client, parent)
		switch {
		case err == nil:
			set = s
		case time.Now().After(deadline):
			t.Fatal(err)
		default:
			time.Sleep(50 * time.Millisecond) // the REST mapper learns the new kind
		}
	}
	if _, err := set.Apply(ctx, parse(t, cm("a"))); err == nil || !strings.Contains(err.Error(), "lacks the label") {
		t.Fatalf("parent of an unlabelled CRD: %v", err)
	}
	crd.SetLabels(map[string]string{applyset.ParentTypeLabel: "true"})
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(crd), crd)
	crd.SetLabels(map[string]string{applyset.ParentTypeLabel: "true"})
	if err := env.Client.Update(ctx, crd); err != nil {
		t.Fatal(err)
	}
	_, err := set.Apply(ctx, parse(t, cm("a")))
	var ve *applyset.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "field metadata.namespace") {
		t.Fatalf("a namespaced member without a namespace: %v", err)
	}
	res, err := set.Apply(ctx, parse(t, strings.Replace(cm("a"), "name: a\n", "name: a\n  namespace: "+ns+"\n", 1)))
	if err != nil || res.Count(applyset.Applied) != 1 {
		t.Fatalf("with a namespace: %+v, %v", res, err)
	}
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(parent), parent)
	if got := parent.GetAnnotations()[applyset.NamespacesAnnotation]; got != ns {
		t.Errorf("additional namespaces = %q, want %q", got, ns)
	}
	if res, err := set.Apply(ctx, nil); err != nil || res.Count(applyset.Pruned) != 1 {
		t.Errorf("prune across namespaces: %+v, %v", res, err)
	}
}

func TestParseErrorsNameTheDocument(t *testing.T) {
	for _, tc := range []struct {
		yaml, field string
		doc         int
	}{
		{cm("a") + "kind: ConfigMap\nmetadata: {name: x}\n", "apiVersion", 1},
		{cm("a") + cm("b") + "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", "metadata.name", 2},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: [1]\n", "metadata", 0},
	} {
		_, err := applyset.ParseYAML([]byte(tc.yaml))
		var pe *applyset.ParseError
		if !errors.As(err, &pe) || pe.Document != tc.doc || pe.Field != tc.field {
			t.Errorf("ParseYAML error = %v, want document %d field %s", err, tc.doc, tc.field)
		}
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// deployYAML is a Deployment, which never becomes Current on envtest
// (no controller rolls it out).
const deployYAML = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
`

// TestWaitCurrentHoldsThePrune: envtest runs no deployment controller, so a
// Deployment never becomes Current; the old members must then stay.
func TestWaitCurrentHoldsThePrune(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}}
	set, _ := applyset.New(env.Client, parent, applyset.WaitCurrent(time.Second))
	if _, err := set.Apply(ctx, parse(t, cm("old"))); err != nil {
		t.Fatalf("a ConfigMap is Current at once: %v", err)
	}
	_, err := set.Apply(ctx, parse(t, cm("new")+deployYAML))
	var nce *applyset.NotCurrentError
	if !errors.As(err, &nce) || nce.Objects["Deployment.apps "+ns+"/web"] == "" {
		t.Fatalf("apply with a Deployment that never rolls out: %v", err)
	}
	if !exists(t, configMap(ns, "old")) {
		t.Error("pruned although the new set is not Current")
	}
}

// TestPartialPruneFailure prunes as a user who may delete ConfigMaps but
// not Secrets: the ConfigMap goes, the Secret's failure is reported, and the
// parent keeps listing Secret so that a later prune still finds it.
func TestPartialPruneFailure(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-secret-delete"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "create", "patch", "update"}},
	}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "limited"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "limited-" + ns}}}
	for _, o := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	user, err := env.Envtest.AddUser(envtest.User{Name: "limited-" + ns}, nil)
	if err != nil {
		t.Fatal(err)
	}
	limited, err := client.New(user.Config(), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	set, err := applyset.New(limited, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := set.Apply(ctx, parse(t, cm("a")+cm("b")+secret("c"))); err != nil {
		t.Fatal(err)
	}
	res, err := set.Apply(ctx, parse(t, cm("a")))
	if !apierrors.IsForbidden(err) || res.Count(applyset.Pruned) != 1 || res.Count(applyset.Failed) != 1 {
		t.Fatalf("partial prune: %+v, %v", res.Objects, err)
	}
	if exists(t, configMap(ns, "b")) || !exists(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}}) {
		t.Error("wrong objects pruned")
	}
	parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}}
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(parent), parent)
	if got := parent.Annotations[applyset.GroupKindsAnnotation]; got != "ConfigMap,Secret" {
		t.Errorf("group kinds after a failed prune = %q: the Secret would be forgotten", got)
	}
	// An administrator's prune finishes the job.
	admin, _ := applyset.New(env.Client, parent)
	if res, err := admin.Apply(ctx, parse(t, cm("a"))); err != nil || res.Count(applyset.Pruned) != 1 {
		t.Fatalf("second prune: %+v, %v", res.Objects, err)
	}
}

func TestReadFSNamesTheFile(t *testing.T) {
	fsys := fstest.MapFS{
		"m/a.yaml":   {Data: []byte(cm("a"))},
		"m/b.yml":    {Data: []byte(cm("b") + "kind: ConfigMap\n")},
		"m/notes.md": {Data: []byte("not yaml")},
	}
	_, err := applyset.ReadFS(fsys, "m/*")
	var pe *applyset.ParseError
	if !errors.As(err, &pe) || pe.Source != "m/b.yml" || pe.Document != 1 {
		t.Fatalf("ReadFS error = %v", err)
	}
	delete(fsys, "m/b.yml")
	objs, err := applyset.ReadFS(fsys, "m/*")
	if err != nil || len(objs) != 1 || objs[0].GetName() != "a" {
		t.Fatalf("ReadFS = %v, %v", objs, err)
	}
}

// TestParentIsNoMember: the parent in the manifest is refused before any
// write; it would become its own member and be pruned with the set's
// record.
func TestParentIsNoMember(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}}
	set, _ := applyset.New(env.Client, parent)
	if _, err := set.Apply(ctx, parse(t, cm("a"))); err != nil {
		t.Fatal(err)
	}
	_, err := set.Apply(ctx, parse(t, cm("a")+secret("set")))
	var invalid *applyset.ValidationError
	if !errors.As(err, &invalid) || len(invalid.Written) != 0 {
		t.Errorf("the parent as a member: %v", err)
	}
	res, err := set.Apply(ctx, parse(t, cm("a")))
	if err != nil || !exists(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}}) {
		t.Fatalf("parent pruned: %+v, %v", res.Objects, err)
	}
}

// TestClusterScopedParentIgnoresANamespace: a namespace set on a
// cluster-scoped parent is not part of its id (kubectl's id has none), nor
// of what Apply reads and writes.
func TestClusterScopedParentIgnoresANamespace(t *testing.T) {
	env.Require(t)
	parent := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Namespace: "stray", Name: "p"}}
	set, err := applyset.New(env.Client, parent)
	if err != nil {
		t.Fatal(err)
	}
	if want := applyset.ID(schema.GroupKind{Kind: "Namespace"}, "", "p"); set.ID() != want {
		t.Errorf("id %s, want %s", set.ID(), want)
	}
}

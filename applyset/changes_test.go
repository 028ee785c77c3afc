package applyset_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/applyset"
	"github.com/steadyk8s/steady/internal/testapi"
)

// TestRemovalIsAChange: a label, a data key, a bool set to false and an
// emptied list dropped from the manifest are removed live, and not judged
// unchanged without asking the server; another writer's label, annotation
// and finalizer survive.
func TestRemovalIsAChange(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	set, _ := applyset.New(c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}})
	v1 := `apiVersion: v1
kind: ConfigMap
metadata: {name: a, labels: {x: "1", y: "2"}}
data: {k: v, k2: v2}
---
apiVersion: v1
kind: Service
metadata: {name: svc}
spec: {ports: [{port: 80}], publishNotReadyAddresses: true}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: r}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: test.steady.dev/v1
kind: Widget
metadata: {name: w}
spec: {size: 3, color: blue}
`
	if _, err := set.Apply(ctx, parse(t, v1)); err != nil {
		t.Fatal(err)
	}
	// Another writer's data.
	a := configMap(ns, "a")
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(a), a)
	before := a.DeepCopy()
	a.Labels["theirs"] = "yes"
	a.Annotations = map[string]string{"theirs": "yes"}
	a.Finalizers = []string{"example.com/theirs"}
	if err := env.Client.Patch(ctx, a, client.MergeFrom(before), client.FieldOwner("someone-else")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a := configMap(ns, "a")
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(a), a)
		a.Finalizers = nil
		_ = env.Client.Update(ctx, a)
	})
	v2 := strings.NewReplacer(`y: "2"`, `z: "3"`, ", k2: v2", "", "publishNotReadyAddresses: true", "publishNotReadyAddresses: false",
		`rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]`, "rules: []", "size: 3, color: blue", "size: 0").Replace(v1)
	n.Reset()
	res, err := set.Apply(ctx, parse(t, v2))
	if err != nil || res.Count(applyset.Applied) != 4 {
		t.Fatalf("apply of the removals: %+v, %v (%s)", res.Objects, err, n)
	}
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(a), a)
	if _, ok := a.Labels["y"]; ok || a.Labels["z"] != "3" || a.Data["k2"] != "" || a.Data["k"] != "v" {
		t.Errorf("ConfigMap after the removals: %v %v", a.Labels, a.Data)
	}
	if a.Labels["theirs"] != "yes" || a.Annotations["theirs"] != "yes" || !slices.Contains(a.Finalizers, "example.com/theirs") {
		t.Errorf("another writer's data lost: %v %v %v", a.Labels, a.Annotations, a.Finalizers)
	}
	svc := &corev1.Service{}
	_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "svc"}, svc)
	if svc.Spec.PublishNotReadyAddresses {
		t.Error("publishNotReadyAddresses still true")
	}
	role := &rbacv1.Role{}
	_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "r"}, role)
	if len(role.Rules) != 0 {
		t.Errorf("rules not emptied: %v", role.Rules)
	}
	w := &testapi.Widget{}
	_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "w"}, w)
	if w.Spec.Size != 0 || w.Spec.Color != "" {
		t.Errorf("widget spec %+v", w.Spec)
	}
	// Dropping the label only: owned, so not unchanged without a dry run.
	v3 := strings.Replace(v2, `labels: {x: "1", z: "3"}`, `labels: {x: "1"}`, 1)
	res, err = set.Apply(ctx, parse(t, v3))
	if err != nil || res.Count(applyset.Applied) != 1 {
		t.Fatalf("apply dropping one label: %+v, %v", res.Objects, err)
	}
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(a), a)
	if _, ok := a.Labels["z"]; ok {
		t.Errorf("label z not removed: %v", a.Labels)
	}
}

// TestKnownUnchangedIsNeverWrong applies random ConfigMaps and Secrets,
// changes them at random (in the manifest and behind the set's back), and
// checks after each Apply that applying the manifest again would change
// nothing: the fast path never called a change unchanged.
func TestKnownUnchangedIsNeverWrong(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewSource(seed))
	ns := env.Namespace(t)
	set, _ := applyset.New(env.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}}, applyset.Force{})
	keys := []string{"a", "b", "c"}
	randomMap := func() map[string]string {
		m := map[string]string{}
		for _, k := range keys {
			if rnd.Intn(2) == 0 {
				m[k] = fmt.Sprint(rnd.Intn(2))
			}
		}
		return m
	}
	manifest := func(kind, field string, labels, data map[string]string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: %s\nmetadata: {name: obj, labels: %s}\n%s: %s\n---\n", kind, flow(labels), field, flow(data))
	}
	for i := 0; i < 25; i++ {
		cmY := manifest("ConfigMap", "data", randomMap(), randomMap())
		secY := manifest("Secret", "stringData", randomMap(), randomMap())
		if _, err := set.Apply(ctx, parse(t, cmY+secY)); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		// Behind the set's back: another writer changes or drops a key.
		if rnd.Intn(2) == 0 {
			o := configMap(ns, "obj")
			_ = env.Client.Get(ctx, client.ObjectKeyFromObject(o), o)
			k := keys[rnd.Intn(len(keys))]
			if rnd.Intn(2) == 0 {
				delete(o.Data, k)
			} else {
				if o.Data == nil {
					o.Data = map[string]string{}
				}
				o.Data[k] = "other"
			}
			if err := env.Client.Update(ctx, o, client.FieldOwner("other")); err != nil {
				t.Fatal(err)
			}
		}
		// The manifest again, sometimes unchanged: the result must be a
		// fixed point of the manifest.
		if rnd.Intn(2) == 0 {
			cmY = manifest("ConfigMap", "data", randomMap(), randomMap())
		}
		if _, err := set.Apply(ctx, parse(t, cmY+secY)); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		for _, o := range parse(t, cmY+secY) {
			o.SetNamespace(ns)
			o.SetLabels(merge(o.GetLabels(), map[string]string{applyset.PartOfLabel: set.ID()}))
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(o.GroupVersionKind())
			_ = env.Client.Get(ctx, client.ObjectKeyFromObject(o), live)
			if err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("steady"), client.ForceOwnership, client.DryRunAll); err != nil {
				t.Fatal(err)
			}
			strip := func(u *unstructured.Unstructured) map[string]any {
				m := u.DeepCopy().Object
				unstructured.RemoveNestedField(m, "metadata", "managedFields")
				return m
			}
			if !equality.Semantic.DeepEqual(strip(live), strip(o)) {
				t.Fatalf("step %d: %s was judged unchanged but a dry run changes it:\nlive %v\nnext %v", i, o.GetKind(), strip(live), strip(o))
			}
		}
	}
}

func flow(m map[string]string) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s: %q", k, v))
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ", ") + "}"
}

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// TestLargeIntegerChangeIsAChange: integers above 2^53 that differ are not
// judged equal (as float64 would have them) by the unchanged fast path.
func TestLargeIntegerChangeIsAChange(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	set, _ := applyset.New(env.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}})
	widget := func(size string) string {
		return "apiVersion: test.steady.dev/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: " + size + "}\n"
	}
	if got, _, err := unstructured.NestedInt64(parse(t, widget("9007199254740993"))[0].Object, "spec", "size"); got != 9007199254740993 {
		t.Errorf("ParseYAML read size as %d, %v", got, err)
	}
	if _, err := set.Apply(ctx, parse(t, widget("9007199254740993"))); err != nil {
		t.Fatal(err)
	}
	res, err := set.Apply(ctx, parse(t, widget("9007199254740992")))
	if err != nil || res.Count(applyset.Applied) != 1 {
		t.Fatalf("a changed large integer: %+v, %v", res.Objects, err)
	}
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(testapi.GroupVersion.WithKind("Widget"))
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "w"}, w); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedInt64(w.Object, "spec", "size"); got != 9007199254740992 {
		t.Errorf("size = %d", got)
	}
}

// TestGoIntegersInUnstructured: an object built in Go with int (or int32,
// float32, uint) values, as an operator writes map literals, is applied,
// not a panic of DeepCopy; a value of no JSON type is refused by name.
func TestGoIntegersInUnstructured(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	set, _ := applyset.New(env.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}})
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.steady.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w"},
		"spec":     map[string]any{"size": 3},
	}}
	for i, size := range []any{3, int32(4), uint(5), float32(6), 6} {
		w.Object["spec"].(map[string]any)["size"] = size
		res, err := set.Apply(ctx, []*unstructured.Unstructured{w})
		if err != nil {
			t.Fatalf("size %T: %+v, %v", size, res, err)
		}
		if want := applyset.Applied; i == 4 && res.Count(applyset.Unchanged) != 1 || i < 4 && res.Count(want) != 1 {
			t.Errorf("size %T: %+v", size, res.Objects)
		}
	}
	w.Object["spec"].(map[string]any)["size"] = struct{}{}
	_, err := set.Apply(ctx, []*unstructured.Unstructured{w})
	var invalid *applyset.ValidationError
	if !errors.As(err, &invalid) || !strings.Contains(err.Error(), "spec.size") {
		t.Errorf("a struct value: %v", err)
	}
}

// TestKnownUnchangedIsNeverWrongOnACustomResource: as
// TestKnownUnchangedIsNeverWrong, on a custom resource's numbers and
// strings (absent, zero, set), with another writer changing them.
func TestKnownUnchangedIsNeverWrongOnACustomResource(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewSource(seed))
	ns := env.Namespace(t)
	set, _ := applyset.New(env.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}}, applyset.Force{})
	manifest := func() string {
		var fields []string
		switch rnd.Intn(4) {
		case 1:
			fields = append(fields, "size: 0")
		case 2:
			fields = append(fields, "size: 1")
		case 3:
			fields = append(fields, "size: 2.0")
		}
		switch rnd.Intn(3) {
		case 1:
			fields = append(fields, `color: ""`)
		case 2:
			fields = append(fields, "color: red")
		}
		if len(fields) == 0 {
			// spec: {} the API server may turn into spec: null (and refuse)
			// once the last owned field of spec is gone: not applyset's.
			fields = append(fields, "owner: me")
		}
		return "apiVersion: test.steady.dev/v1\nkind: Widget\nmetadata: {name: w}\nspec: {" + strings.Join(fields, ", ") + "}\n"
	}
	y := manifest()
	for i := 0; i < 20; i++ {
		if _, err := set.Apply(ctx, parse(t, y)); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if rnd.Intn(2) == 0 {
			w := &testapi.Widget{}
			_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "w"}, w)
			w.Spec.Size = rnd.Intn(3)
			w.Spec.Color = []string{"", "red", "blue"}[rnd.Intn(3)]
			if err := env.Client.Update(ctx, w, client.FieldOwner("other")); err != nil {
				t.Fatal(err)
			}
		}
		if rnd.Intn(2) == 0 {
			y = manifest()
		}
		if _, err := set.Apply(ctx, parse(t, y)); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		o := parse(t, y)[0]
		o.SetNamespace(ns)
		o.SetLabels(map[string]string{applyset.PartOfLabel: set.ID()})
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(o), live)
		if err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("steady"), client.ForceOwnership, client.DryRunAll); err != nil {
			t.Fatal(err)
		}
		strip := func(u *unstructured.Unstructured) map[string]any {
			m := u.DeepCopy().Object
			unstructured.RemoveNestedField(m, "metadata", "managedFields")
			return m
		}
		if !equality.Semantic.DeepEqual(strip(live), strip(o)) {
			t.Fatalf("step %d: judged unchanged but a dry run changes it:\n%s\nlive %v\nnext %v", i, y, strip(live), strip(o))
		}
	}
}

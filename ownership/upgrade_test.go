package ownership_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
)

// TestAnEarlierVersionsRecordIsKept: a converged child that an earlier
// version recorded in the annotation (no labels of the record) costs no
// request through a manager's cache, for CreateOrUpdate and CreateOrPatch,
// whether mutate leaves the metadata alone or builds the labels and
// annotations anew (dropping the record, which is put back from the live
// child): no write storm on upgrade. The child keeps its annotation.
func TestAnEarlierVersionsRecordIsKept(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startCached(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "app")
	for _, fn := range fns {
		for _, rebuild := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/rebuilding the metadata %v", fn.name, rebuild), func(t *testing.T) {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("earlier-%s-%v", strings.ToLower(fn.name), rebuild),
					Labels:      map[string]string{"app": "x"},
					Annotations: map[string]string{ownership.OwnerAnnotation: "test.steady.dev/Widget/" + ns + "/app", "note": "y"},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: testapi.GroupVersion.String(), Kind: "Widget", Name: "app", UID: o.UID,
						Controller: new(true), BlockOwnerDeletion: new(true)}}},
					Data: map[string]string{"k": "v"}}
				if err := env.Client.Create(ctx, cm); err != nil {
					t.Fatal(err)
				}
				cachedSees(t, cc, cm)
				for call := range 2 {
					mine := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cm.Name}}
					mutate := func() error {
						if rebuild {
							mine.Labels = map[string]string{"app": "x"}
							mine.Annotations = map[string]string{"note": "y"}
						}
						mine.Data = map[string]string{"k": "v"}
						return nil
					}
					cc.Counter.Reset()
					op, err := fn.fn(ctx, cc.Client, o, mine, mutate)
					if err != nil || op != controllerutil.OperationResultNone || cc.Counter.String() != "" {
						t.Errorf("call %d: %s, %v (requests %s); want unchanged, no request", call, op, err, cc.Counter)
					}
				}
				var got corev1.ConfigMap
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
					t.Fatal(err)
				}
				if got.ResourceVersion != cm.ResourceVersion || got.Labels[ownership.OwnerKindLabel] != "" {
					t.Errorf("the child was written: labels %v, annotations %v", got.Labels, got.Annotations)
				}
			})
		}
	}
}

// TestApplySendsTheLabels: Apply, which sends the whole configuration
// anyway, sends the record in labels and not the annotation: an earlier
// version's annotation that its field manager applied is removed by the
// API server, one that another writer owns (a restore created the child)
// stays, and another manager's annotations and labels are never removed.
// The next apply changes nothing.
func TestApplySendsTheLabels(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "app")
	rec := "test.steady.dev/Widget/" + ns + "/app"
	ref := metav1.OwnerReference{APIVersion: testapi.GroupVersion.String(), Kind: "Widget", Name: "app", UID: o.UID, Controller: new(true), BlockOwnerDeletion: new(true)}
	apply := func(name, manager string, labels, annotations map[string]string, refs ...metav1.OwnerReference) {
		t.Helper()
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetNamespace(ns)
		u.SetName(name)
		u.SetLabels(labels)
		u.SetAnnotations(annotations)
		u.SetOwnerReferences(refs)
		if manager == "steady-test" {
			_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"k": "v"}, "data")
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		// earlier writes the child as an earlier version and another
		// writer left it.
		earlier func(name string)
		// kept says whether the annotation record stays.
		kept bool
	}{
		{"applied by an earlier version", func(name string) {
			apply(name, "steady-test", nil, map[string]string{ownership.OwnerAnnotation: rec}, ref)
			apply(name, "other", map[string]string{"other": "1"}, map[string]string{"other.example/keep": "1"})
		}, false},
		{"restored by another writer", func(name string) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
				Labels: map[string]string{"other": "1"}, Annotations: map[string]string{ownership.OwnerAnnotation: rec, "other.example/keep": "1"}},
				Data: map[string]string{"k": "v"}}
			if err := c.Create(ctx, cm, client.FieldOwner("restore")); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "apply-" + strings.ReplaceAll(tc.name, " ", "-")
			tc.earlier(name)
			for call := range 2 {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"k": "v"}}
				n.Reset()
				op, err := applyObject(ctx, c, o, cm, "steady-test")
				want := map[bool]controllerutil.OperationResult{true: controllerutil.OperationResultUpdated, false: controllerutil.OperationResultNone}[call == 0]
				if err != nil || op != want {
					t.Errorf("call %d: %s, %v (requests %s); want %s", call, op, err, n, want)
				}
				if call == 0 && n.Writes() != 1 {
					t.Errorf("call %d: requests %s; want one apply", call, n)
				}
			}
			var got corev1.ConfigMap
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
				t.Fatal(err)
			}
			if !metav1.IsControlledBy(&got, o) || got.Labels[ownership.OwnerKindLabel] != "Widget.test.steady.dev" || got.Labels[ownership.OwnerNameLabel] != "app" {
				t.Errorf("owners %v, labels %v; want the record in labels", got.OwnerReferences, got.Labels)
			}
			if kept := got.Annotations[ownership.OwnerAnnotation] == rec; kept != tc.kept {
				t.Errorf("annotations %v: the earlier record kept %v, want %v", got.Annotations, kept, tc.kept)
			}
			if got.Annotations["other.example/keep"] != "1" || got.Labels["other"] != "1" {
				t.Errorf("labels %v, annotations %v: another writer's removed", got.Labels, got.Annotations)
			}
		})
	}
}

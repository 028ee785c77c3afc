package cachewait_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/cachewait"
)

// TestDeleteAllOfInAnyRepresentation: a DeleteAllOf made metadata-only is
// waited for by typed, unstructured and metadata Lists alike.
func TestDeleteAllOfInAnyRepresentation(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	noTimeouts(t)
	ns := env.Namespace(t)
	c := cachewait.NewClient(cc.Manager, cachewait.WithTimeout(3*time.Second))
	labels := map[string]string{"app": "dao"}
	gvk := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	lists := map[string]func() client.ObjectList{
		"typed": func() client.ObjectList { return &corev1.ConfigMapList{} },
		"unstructured": func() client.ObjectList {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(gvk.GroupVersion().WithKind("ConfigMapList"))
			return l
		},
		"metadata": func() client.ObjectList {
			l := &metav1.PartialObjectMetadataList{}
			l.SetGroupVersionKind(gvk.GroupVersion().WithKind("ConfigMapList"))
			return l
		},
	}
	for name, newList := range lists {
		t.Run(name, func(t *testing.T) {
			for i := range 3 {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint(name, i), Labels: labels}}
				must(t, env.Client.Create(ctx, cm))
				must(t, cachewait.ForWrite(ctx, cc.Client, cm))
			}
			all := &metav1.PartialObjectMetadata{}
			all.SetGroupVersionKind(gvk)
			must(t, c.DeleteAllOf(ctx, all, client.InNamespace(ns), client.MatchingLabels(labels)))
			list := newList()
			must(t, c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels(labels)))
			if n := meta.LenList(list); n != 0 {
				t.Errorf("%s List after DeleteAllOf: %d items", name, n)
			}
		})
	}
}

// TestDeleteAllOfAsksOnce: after a DeleteAllOf of 20 objects, with a cache
// 2.5s behind, a List waits for the cache, asking the API reader once (one
// LIST, after After) which of the objects the cache still holds are gone;
// it does not ask again for them (the bug: one GET per object every After,
// forgetting the NotFound answers: 40 GETs).
func TestDeleteAllOfAsksOnce(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, 2500*time.Millisecond)
	noTimeouts(t)
	ns := env.Namespace(t)
	batch := client.MatchingLabels{"batch": "20"}
	var last *corev1.ConfigMap
	for i := range 20 {
		last = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("cm-", i), Labels: batch}}
		must(t, env.Client.Create(ctx, last))
	}
	must(t, cachewait.ForWrite(ctx, cc.Client, last))
	c := cachewait.NewClient(cc.Manager, cachewait.WithTimeout(10*time.Second))
	cc.Counter.Reset()
	must(t, c.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns), batch))
	var list corev1.ConfigMapList
	must(t, c.List(ctx, &list, client.InNamespace(ns), batch))
	if len(list.Items) != 0 {
		t.Errorf("List after DeleteAllOf: %d items", len(list.Items))
	}
	t.Logf("requests: %s", cc.Counter)
	if d, g, l := cc.Counter.Get("DELETE"), cc.Counter.Get("GET"), cc.Counter.Get("LIST"); d != 1 || g != 0 || l != 1 {
		t.Errorf("%d DELETEs, %d GETs and %d LISTs, want 1, 0 and 1 (%s)", d, g, l, cc.Counter)
	}
}

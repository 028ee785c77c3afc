package cachewait

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestExcludes: which writes a cache made with given options certainly
// cannot hold, following controller-runtime's defaulting (a namespace's
// settings, then the kind's, then DefaultNamespaces', then the defaults);
// what cannot be told (a field selector on another field) is taken to be
// held.
func TestExcludes(t *testing.T) {
	managed := labels.SelectorFromSet(labels.Set{"managed": "yes"})
	other := labels.SelectorFromSet(labels.Set{"team": "x"})
	cm := func(ns string, lbls map[string]string) client.Object {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm", Labels: lbls}}
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	yes := map[string]string{"managed": "yes"}
	for _, tc := range []struct {
		name string
		opts *cache.Options
		obj  client.Object
		want bool
	}{
		{"no options", nil, cm("a", nil), false},
		{"no limits", &cache.Options{}, cm("a", nil), false},
		{"DefaultLabelSelector, unlabelled", &cache.Options{DefaultLabelSelector: managed}, cm("a", nil), true},
		{"DefaultLabelSelector, labelled", &cache.Options{DefaultLabelSelector: managed}, cm("a", yes), false},
		{"DefaultLabelSelector, cluster-scoped", &cache.Options{DefaultLabelSelector: managed}, node, true},
		{"ByObject Label of the kind", &cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {Label: managed}}}, cm("a", nil), true},
		{"ByObject Label of another kind", &cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Secret{}: {Label: managed}}}, cm("a", nil), false},
		{"namespace not watched", &cache.Options{DefaultNamespaces: map[string]cache.Config{"b": {}}}, cm("a", yes), true},
		{"namespace watched", &cache.Options{DefaultNamespaces: map[string]cache.Config{"a": {}}}, cm("a", nil), false},
		{"AllNamespaces for the others", &cache.Options{DefaultNamespaces: map[string]cache.Config{"b": {LabelSelector: managed}, cache.AllNamespaces: {}}}, cm("a", nil), false},
		{"the namespace's selector", &cache.Options{DefaultNamespaces: map[string]cache.Config{"a": {LabelSelector: managed}, cache.AllNamespaces: {}}}, cm("a", nil), true},
		{"the namespace's selector before the kind's", &cache.Options{
			DefaultNamespaces: map[string]cache.Config{"a": {LabelSelector: other}},
			ByObject:          map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {Label: managed}},
		}, cm("a", yes), true},
		{"the kind's namespaces before the defaults'", &cache.Options{
			DefaultNamespaces: map[string]cache.Config{"b": {}},
			ByObject:          map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{"a": {}}}},
		}, cm("a", nil), false},
		{"namespaces ignored for a cluster-scoped kind", &cache.Options{DefaultNamespaces: map[string]cache.Config{"b": {}}}, node, false},
		{"field selector on the name", &cache.Options{DefaultFieldSelector: fields.OneTermEqualSelector("metadata.name", "other")}, cm("a", nil), true},
		{"field selector on another field", &cache.Options{DefaultFieldSelector: fields.OneTermEqualSelector("spec.nodeName", "n")}, cm("a", nil), false},
	} {
		if got := excludes(tc.opts, tc.obj, nil); got != tc.want {
			t.Errorf("%s: excludes = %v, want %v", tc.name, got, tc.want)
		}
	}
}

package ownership

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestOwnerKindRecordIsNewRecord: the record built from the owner kind
// reference returns (setController's and Apply's) is the one newRecord
// builds from the reference (RemoveOwnerReference's), for owners of the
// core group and others, label values or not, namespaced or not.
func TestOwnerKindRecordIsNewRecord(t *testing.T) {
	gvks := []schema.GroupVersionKind{
		{Version: "v1", Kind: "ConfigMap"},
		{Group: "test.steady.dev", Version: "v1", Kind: "Widget"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
		{Group: "example.com", Version: "v1alpha1", Kind: strings.Repeat("K", 60)}, // kind label too long
		{Group: "example.com", Kind: "NoVersion"},
		{Version: "v1"}, // no kind
		{},
	}
	for _, gvk := range gvks {
		for _, name := range []string{"a", "system:steady", strings.Repeat("n", 64), ""} {
			for _, ns := range []string{"", "ns"} {
				k := new(newOwnerKind(gvk.GroupVersion().String(), gvk.Kind))
				ref := metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: name}
				if got, want := k.record(name, ns), newRecord(ref, ns); got != want {
					t.Errorf("%v %q in %q: record %+v, newRecord %+v", gvk, name, ns, got, want)
				}
				if k.apiVersion != ref.APIVersion {
					t.Errorf("%v: apiVersion %q, want %q", gvk, k.apiVersion, ref.APIVersion)
				}
			}
		}
	}
}

// TestKeepRecordReturnsChildRecord: what keepRecord returns, which
// prepare hands setController instead of reading the child's
// record again, is the child's record after it, for every combination of
// the record's keys (absent, empty, set) on the child and the live object,
// or no live object.
func TestKeepRecordReturnsChildRecord(t *testing.T) {
	values := []*string{nil, new(""), new("Widget.test.steady.dev"), new("other")}
	set := func(m map[string]string, k string, v *string) {
		if v != nil {
			m[k] = *v
		}
	}
	obj := func(kind, name, ann *string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}, Annotations: map[string]string{}}}
		set(cm.Labels, OwnerKindLabel, kind)
		set(cm.Labels, OwnerNameLabel, name)
		set(cm.Annotations, OwnerAnnotation, ann)
		return cm
	}
	for _, ck := range values {
		for _, cn := range values {
			for _, ca := range values {
				for _, lk := range values {
					for _, la := range values {
						for _, live := range []*corev1.ConfigMap{nil, obj(lk, lk, la)} {
							child := obj(ck, cn, ca)
							var got recordedOn
							if live == nil {
								got = keepRecord(child, nil)
							} else {
								got = keepRecord(child, live)
							}
							if want := recordOf(child); got != want {
								t.Fatalf("child %v, live %v: keepRecord %+v, child's record %+v", child.ObjectMeta, live, got, want)
							}
						}
					}
				}
			}
		}
	}
}

package object

import (
	"reflect"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// MetaToMap is md as runtime.DefaultUnstructuredConverter.ToUnstructured
// gives it (the same map, value for value: what the engine diffs and
// writes), built field by field without reflection: the write engine
// converts two ObjectMetas on every write, and the converter's reflection
// cost more than the rest of a finalizer's write. ObjectMeta with
// managedFields (their FieldsV1 converts through its MarshalJSON) goes to
// the converter.
func MetaToMap(md *metav1.ObjectMeta) (map[string]any, error) {
	if len(md.ManagedFields) > 0 {
		return runtime.DefaultUnstructuredConverter.ToUnstructured(md)
	}
	m := make(map[string]any, 4)
	str := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	str("name", md.Name)
	str("generateName", md.GenerateName)
	str("namespace", md.Namespace)
	str("selfLink", md.SelfLink)
	str("uid", string(md.UID))
	str("resourceVersion", md.ResourceVersion)
	if md.Generation != 0 {
		m["generation"] = md.Generation
	}
	// A zero Time converts to nil; apimachinery v0.36 tags the field
	// omitzero, and the converter then leaves it out.
	if !md.CreationTimestamp.IsZero() || !creationOmitZero {
		m["creationTimestamp"] = timeValue(md.CreationTimestamp)
	}
	if md.DeletionTimestamp != nil {
		m["deletionTimestamp"] = timeValue(*md.DeletionTimestamp)
	}
	if md.DeletionGracePeriodSeconds != nil {
		m["deletionGracePeriodSeconds"] = *md.DeletionGracePeriodSeconds
	}
	if len(md.Labels) > 0 {
		m["labels"] = stringsMap(md.Labels)
	}
	if len(md.Annotations) > 0 {
		m["annotations"] = stringsMap(md.Annotations)
	}
	if len(md.OwnerReferences) > 0 {
		refs := make([]any, len(md.OwnerReferences))
		for i, r := range md.OwnerReferences {
			ref := make(map[string]any, 6)
			ref["apiVersion"], ref["kind"], ref["name"], ref["uid"] = r.APIVersion, r.Kind, r.Name, string(r.UID)
			if r.Controller != nil {
				ref["controller"] = *r.Controller
			}
			if r.BlockOwnerDeletion != nil {
				ref["blockOwnerDeletion"] = *r.BlockOwnerDeletion
			}
			refs[i] = ref
		}
		m["ownerReferences"] = refs
	}
	if len(md.Finalizers) > 0 {
		fs := make([]any, len(md.Finalizers))
		for i, f := range md.Finalizers {
			fs[i] = f
		}
		m["finalizers"] = fs
	}
	return m, nil
}

// creationOmitZero says whether ObjectMeta's creationTimestamp is tagged
// omitzero (k8s.io/apimachinery v0.36 on): the converter leaves a zero one
// out, where before it gave a nil.
var creationOmitZero = func() bool {
	f, _ := reflect.TypeFor[metav1.ObjectMeta]().FieldByName("CreationTimestamp")
	_, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	return slices.Contains(strings.Split(opts, ","), "omitzero")
}()

// timeValue is t as the converter gives it (metav1.Time.ToUnstructured):
// nil when zero, else RFC 3339 in UTC.
func timeValue(t metav1.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

func stringsMap(in map[string]string) map[string]any {
	out := make(map[string]any, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

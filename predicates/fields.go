package predicates

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/steadyk8s/steady/internal/object"
)

// Changed passes updates for which value(old) and value(new) differ
// (apimachinery's semantic equality: quantities and times compare by
// value), updates that start the deletion or change the finalizers, and
// every create, delete and generic event. value picks what the controller
// reacts to, typed and cheap:
//
//	predicates.Changed(func(o client.Object) any {
//		s := o.(*corev1.Service)
//		return []any{s.Spec.Type, s.Spec.LoadBalancerClass, s.Status.LoadBalancer}
//	})
func Changed(value func(client.Object) any) predicate.Predicate {
	return typedChanged[client.Object](value)
}

// typedChanged is [Changed] for any object type (the exported one is its client.Object instance).
func typedChanged[T client.Object](value func(T) any) predicate.TypedPredicate[T] {
	return updateFilter(func(old, new T) bool {
		return lifecycleChanged(old, new) || !equality.Semantic.DeepEqual(value(old), value(new))
	})
}

// FieldChanged passes updates that change any of the fields at paths
// (dotted JSON paths: "spec.type", "status.loadBalancer"; a field that
// appears or goes is a change), updates that start the deletion or change
// the finalizers, and every create, delete and generic event. It works on
// any object, typed or unstructured, at the cost of converting both to JSON
// maps per update; [Changed] compares typed values without that. A key with
// a dot in it (an annotation "example.com/x") cannot be named by a dotted
// path: use [Changed].
func FieldChanged(paths ...string) predicate.Predicate {
	return typedFieldChanged[client.Object](paths...)
}

// typedFieldChanged is [FieldChanged] for any object type (the exported one is its client.Object instance).
func typedFieldChanged[T client.Object](paths ...string) predicate.TypedPredicate[T] {
	split := make([][]string, 0, len(paths))
	for _, p := range paths {
		if p = strings.Trim(p, "."); p != "" {
			split = append(split, strings.Split(p, "."))
		}
	}
	return updateFilter(func(old, new T) bool {
		if lifecycleChanged(old, new) {
			return true
		}
		om, err1 := object.ToMap(old)
		nm, err2 := object.ToMap(new)
		if err1 != nil || err2 != nil {
			return true // cannot tell: let it through
		}
		for _, p := range split {
			ov, ofound, _ := unstructured.NestedFieldNoCopy(om, p...)
			nv, nfound, _ := unstructured.NestedFieldNoCopy(nm, p...)
			if ofound != nfound || !equality.Semantic.DeepEqual(ov, nv) {
				return true
			}
		}
		return false
	})
}

var (
	_ predicate.Predicate = Changed(nil)
	_ predicate.Predicate = FieldChanged()
)

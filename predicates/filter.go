package predicates

import (
	"reflect"
	"regexp"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// isNil reports whether obj is nil, also as a typed nil pointer.
func isNil[T client.Object](obj T) bool {
	v := reflect.ValueOf(any(obj))
	return !v.IsValid() || (v.Kind() == reflect.Pointer && v.IsNil())
}

// objectFilter passes the events whose object satisfies keep: for updates,
// when either the old or the new object does, so that an object leaving the
// filtered set is seen once more.
func objectFilter[T client.Object](keep func(T) bool) predicate.TypedFuncs[T] {
	ok := func(obj T) bool { return !isNil(obj) && keep(obj) }
	return predicate.TypedFuncs[T]{
		CreateFunc:  func(e event.TypedCreateEvent[T]) bool { return ok(e.Object) },
		DeleteFunc:  func(e event.TypedDeleteEvent[T]) bool { return ok(e.Object) },
		GenericFunc: func(e event.TypedGenericEvent[T]) bool { return ok(e.Object) },
		UpdateFunc:  func(e event.TypedUpdateEvent[T]) bool { return ok(e.ObjectOld) || ok(e.ObjectNew) },
	}
}

// Names passes events of objects with one of the given names, in any
// namespace.
func Names(names ...string) predicate.Predicate { return TypedNames[client.Object](names...) }

// TypedNames is [Names] for typed predicates.
func TypedNames[T client.Object](names ...string) predicate.TypedPredicate[T] {
	return objectFilter(func(o T) bool { return slices.Contains(names, o.GetName()) })
}

// NamespacedNames passes events of exactly the given objects.
func NamespacedNames(keys ...types.NamespacedName) predicate.Predicate {
	return TypedNamespacedNames[client.Object](keys...)
}

// TypedNamespacedNames is [NamespacedNames] for typed predicates.
func TypedNamespacedNames[T client.Object](keys ...types.NamespacedName) predicate.TypedPredicate[T] {
	return objectFilter(func(o T) bool { return slices.Contains(keys, client.ObjectKeyFromObject(o)) })
}

// NameMatches passes events of objects whose name matches re.
func NameMatches(re *regexp.Regexp) predicate.Predicate { return TypedNameMatches[client.Object](re) }

// TypedNameMatches is [NameMatches] for typed predicates.
func TypedNameMatches[T client.Object](re *regexp.Regexp) predicate.TypedPredicate[T] {
	return objectFilter(func(o T) bool { return re.MatchString(o.GetName()) })
}

// Namespaces passes events of objects in one of the given namespaces.
func Namespaces(namespaces ...string) predicate.Predicate {
	return TypedNamespaces[client.Object](namespaces...)
}

// TypedNamespaces is [Namespaces] for typed predicates.
func TypedNamespaces[T client.Object](namespaces ...string) predicate.TypedPredicate[T] {
	return objectFilter(func(o T) bool { return slices.Contains(namespaces, o.GetNamespace()) })
}

// LabelSelector passes events of objects whose labels match sel; an update
// passes when the old or the new labels match, so that an object whose
// labels stop matching is seen once more.
func LabelSelector(sel labels.Selector) predicate.Predicate {
	return TypedLabelSelector[client.Object](sel)
}

// TypedLabelSelector is [LabelSelector] for typed predicates.
func TypedLabelSelector[T client.Object](sel labels.Selector) predicate.TypedPredicate[T] {
	return objectFilter(func(o T) bool { return sel.Matches(labels.Set(o.GetLabels())) })
}

// NotPaused drops the events of objects that carry the annotation (with any
// value); the update that removes it passes, so the object is reconciled as
// soon as it is resumed.
func NotPaused(annotation string) predicate.Predicate {
	return TypedNotPaused[client.Object](annotation)
}

// TypedNotPaused is [NotPaused] for typed predicates.
func TypedNotPaused[T client.Object](annotation string) predicate.TypedPredicate[T] {
	paused := func(o T) bool { _, ok := o.GetAnnotations()[annotation]; return ok }
	f := objectFilter(func(o T) bool { return !paused(o) })
	f.UpdateFunc = func(e event.TypedUpdateEvent[T]) bool { return !isNil(e.ObjectNew) && !paused(e.ObjectNew) }
	return f
}

package predicates

import (
	"reflect"
	"slices"

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
func Names(names ...string) predicate.Predicate { return typedNames[client.Object](names...) }

// typedNames is [Names] for any object type (the exported one is its client.Object instance).
func typedNames[T client.Object](names ...string) predicate.TypedPredicate[T] {
	return objectFilter(func(o T) bool { return slices.Contains(names, o.GetName()) })
}

// Filter passes the events of objects for which keep holds: a create,
// delete or generic event when its object does, an update when the old or
// the new object does, so that an object leaving the filtered set (its
// labels changed, say) is seen once more. Nil objects never pass.
//
//	predicates.Filter(func(o client.Object) bool { return sel.Matches(labels.Set(o.GetLabels())) })
func Filter(keep func(client.Object) bool) predicate.Predicate {
	return objectFilter[client.Object](keep)
}

// NotPaused drops the events of objects that carry the annotation (with any
// value); the update that removes it passes, so the object is reconciled as
// soon as it is resumed.
func NotPaused(annotation string) predicate.Predicate {
	return typedNotPaused[client.Object](annotation)
}

// typedNotPaused is [NotPaused] for any object type (the exported one is its client.Object instance).
func typedNotPaused[T client.Object](annotation string) predicate.TypedPredicate[T] {
	paused := func(o T) bool { _, ok := o.GetAnnotations()[annotation]; return ok }
	f := objectFilter(func(o T) bool { return !paused(o) })
	f.UpdateFunc = func(e event.TypedUpdateEvent[T]) bool { return !isNil(e.ObjectNew) && !paused(e.ObjectNew) }
	return f
}

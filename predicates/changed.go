package predicates

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// updateFilter passes creates, deletes and generics of non-nil objects, and
// the updates for which changed(old, new) holds.
func updateFilter[T client.Object](changed func(old, new T) bool) predicate.TypedFuncs[T] {
	f := objectFilter(func(T) bool { return true })
	f.UpdateFunc = func(e event.TypedUpdateEvent[T]) bool {
		return !isNil(e.ObjectOld) && !isNil(e.ObjectNew) && changed(e.ObjectOld, e.ObjectNew)
	}
	return f
}

// lifecycleChanged holds when deletion started or the finalizers changed:
// the updates a controller with finalizers must see whatever else it filters.
func lifecycleChanged[T client.Object](old, new T) bool {
	return deletionStarted(old, new) || !slices.Equal(old.GetFinalizers(), new.GetFinalizers())
}

func deletionStarted[T client.Object](old, new T) bool {
	return old.GetDeletionTimestamp() == nil && new.GetDeletionTimestamp() != nil
}

// GenerationChanged passes updates that change metadata.generation (the
// spec, for most types), start the deletion or change the finalizers, and
// every create, delete and generic event.
func GenerationChanged() predicate.Predicate { return typedGenerationChanged[client.Object]() }

// typedGenerationChanged is [GenerationChanged] for typed predicates.
func typedGenerationChanged[T client.Object]() predicate.TypedPredicate[T] {
	return updateFilter(func(old, new T) bool {
		return old.GetGeneration() != new.GetGeneration() || lifecycleChanged(old, new)
	})
}

// GenerationOrMetadataChanged is [GenerationChanged] that also passes
// updates changing labels or annotations.
func GenerationOrMetadataChanged() predicate.Predicate {
	return typedGenerationOrMetadataChanged[client.Object]()
}

// typedGenerationOrMetadataChanged is [GenerationOrMetadataChanged] for
// typed predicates.
func typedGenerationOrMetadataChanged[T client.Object]() predicate.TypedPredicate[T] {
	return updateFilter(func(old, new T) bool {
		return old.GetGeneration() != new.GetGeneration() || lifecycleChanged(old, new) ||
			!maps.Equal(old.GetLabels(), new.GetLabels()) || !maps.Equal(old.GetAnnotations(), new.GetAnnotations())
	})
}

// DeletionStarted passes only the update that sets deletionTimestamp, and
// delete events; creates and generics are dropped.
func DeletionStarted() predicate.Predicate { return typedDeletionStarted[client.Object]() }

// typedDeletionStarted is [DeletionStarted] for any object type (the exported one is its client.Object instance).
func typedDeletionStarted[T client.Object]() predicate.TypedPredicate[T] {
	f := updateFilter(deletionStarted[T])
	f.CreateFunc = func(event.TypedCreateEvent[T]) bool { return false }
	f.GenericFunc = func(event.TypedGenericEvent[T]) bool { return false }
	return f
}

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

package predicates

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// The typed forms of the predicates, for the tests that run them on typed
// events: the exported predicates are their client.Object instances.

func TypedGenerationChanged[T client.Object]() predicate.TypedPredicate[T] {
	return typedGenerationChanged[T]()
}

func TypedGenerationOrMetadataChanged[T client.Object]() predicate.TypedPredicate[T] {
	return typedGenerationOrMetadataChanged[T]()
}

func TypedDeletionStarted[T client.Object]() predicate.TypedPredicate[T] {
	return typedDeletionStarted[T]()
}

func TypedNames[T client.Object](names ...string) predicate.TypedPredicate[T] {
	return typedNames[T](names...)
}

func TypedNotPaused[T client.Object](annotation string) predicate.TypedPredicate[T] {
	return typedNotPaused[T](annotation)
}

func TypedFilter[T client.Object](keep func(T) bool) predicate.TypedPredicate[T] {
	return objectFilter[T](keep)
}

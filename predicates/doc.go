// Package predicates filters the events that reach a controller's queue:
// by name, namespace, labels or a pause annotation, and by what changed.
//
// The stock predicate.GenerationChangedPredicate drops every update that does
// not bump metadata.generation, and the start of a deletion (a new
// deletionTimestamp) and finalizer changes are such updates: a controller
// that filters with it never sees its objects being deleted and never runs
// its cleanup (controller-runtime #1575). [GenerationChanged] lets those
// through:
//
//	ctrl.NewControllerManagedBy(mgr).
//		For(&v1.Bucket{}, builder.WithPredicates(predicates.GenerationChanged())).
//		Owns(&corev1.Secret{}, builder.WithPredicates(predicates.Names("credentials")))
//
// Every predicate handles the four event kinds (create, update, delete,
// generic), nil objects (never passed on) and delete events whose final state
// was unknown (tombstones: judged on the last known object). Each has a typed
// variant, TypedX[T], for controller-runtime's typed predicates.
package predicates

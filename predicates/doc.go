// Package predicates filters the events that reach a controller's queue:
// by name, namespace, labels or a pause annotation, and by what changed.
//
// The stock predicate.GenerationChangedPredicate drops every update that does
// not bump metadata.generation. The start of a deletion does bump it, for an
// object that has one (the API server raises it when it sets
// deletionTimestamp), but a change of the finalizers alone does not: a
// controller filtered that way misses another controller's finalizer
// removed (the release its cleanup may wait for), and, on a kind whose
// objects have no generation, the deletion too (controller-runtime #1575).
// [GenerationChanged] lets those through (TestWhatTheStockPredicateMisses
// and TestWhatTheStockPredicateMissesWithoutAGeneration show both on a
// real API server):
//
//	ctrl.NewControllerManagedBy(mgr).
//		For(&v1.Bucket{}, builder.WithPredicates(predicates.GenerationChanged())).
//		Owns(&corev1.Secret{}, builder.WithPredicates(predicates.Names("credentials")))
//
// Every predicate handles the four event kinds (create, update, delete,
// generic), nil objects (never passed on) and delete events whose final state
// was unknown (tombstones: judged on the last known object).
package predicates

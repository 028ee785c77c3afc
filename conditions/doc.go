// Package conditions marks metav1.Condition entries on an object's status,
// idempotently, so that a reconciler can state every condition on every pass
// and a patch helper writes nothing when nothing changed.
//
// Mark the whole truth each time, not only on transitions:
//
//	conditions.MarkTrue(obj, "DatabaseReady", "Provisioned", "")
//	conditions.MarkFalse(obj, "BackupReady", "BucketMissing", "bucket %q not found", name)
//	conditions.SetSummary(obj, "Ready", conditions.SummaryOptions{ConditionTypes: []string{"DatabaseReady", "BackupReady"}})
//
// Each mark sets the condition's ObservedGeneration from the object's
// generation, and changes LastTransitionTime only when the status flips
// (truncated to seconds, as the API server stores it). Marking the same state
// twice leaves the object deep-equal and reports no change. Conditions are
// kept one per type, in a stable order: Available and Ready first, Deleting
// and Paused last, the rest alphabetical (cluster-api's util/conditions
// places its own types by a fixed table instead). Objects that satisfy
// cluster-api's Setter and Getter satisfy these, without conditions
// importing it (an operator that imports conditions does not build
// cluster-api in).
//
// Objects expose their conditions through [Getter] and [Setter]. For an
// unstructured.Unstructured, [ForUnstructured] returns a Setter over
// status.conditions, or a [*FieldError] when that field has the wrong shape.
// [Validate] says which field of a condition the API server would refuse
// (reconcile.Patcher refuses such a condition before it writes).
//
// [SetSummary] computes a Ready-style condition from other conditions,
// with negative-polarity types (where True is bad) and keeping the reason of
// the condition that decided it. [MarkReconciling] and [MarkStalled] set the
// abnormal-true conditions that kstatus (and so Flux and cli-utils) read.
package conditions

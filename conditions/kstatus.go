package conditions

// Condition types that kstatus reads (sigs.k8s.io/cli-utils/pkg/kstatus):
// Reconciling and Stalled are "abnormal-true": present and True only while
// the object is being worked on or is stuck, removed otherwise. Ready is the
// conventional summary that `kubectl wait --for=condition=Ready` waits for.
const (
	Ready       = "Ready"
	Reconciling = "Reconciling"
	Stalled     = "Stalled"
)

// MarkReconciling says that the controller is working towards the desired
// state: Reconciling=True, and Stalled removed. It reports whether the
// object changed.
func MarkReconciling(obj Setter, reason, messageFormat string, args ...any) bool {
	changed := MarkTrue(obj, Reconciling, reason, messageFormat, args...)
	return Delete(obj, Stalled) || changed
}

// MarkStalled says that the controller cannot make progress without a change
// from outside (bad input, say): Stalled=True, and Reconciling removed. It
// reports whether the object changed.
func MarkStalled(obj Setter, reason, messageFormat string, args ...any) bool {
	changed := MarkTrue(obj, Stalled, reason, messageFormat, args...)
	return Delete(obj, Reconciling) || changed
}

// ClearProgress removes Reconciling and Stalled, as a controller does once
// the object is reconciled. It reports whether the object changed.
func ClearProgress(obj Setter) bool {
	a := Delete(obj, Reconciling)
	b := Delete(obj, Stalled)
	return a || b
}

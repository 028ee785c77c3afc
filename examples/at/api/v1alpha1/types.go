package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Phase is where an At is in its life: PENDING until the scheduled time,
// RUNNING while its Pod runs, DONE once the Pod succeeded or failed.
type Phase string

// The phases of an At, as cnat names them.
const (
	PhasePending Phase = "PENDING"
	PhaseRunning Phase = "RUNNING"
	PhaseDone    Phase = "DONE"
)

// Condition types of an At, besides Ready (the summary) and Stalled (a
// malformed schedule).
const (
	// ConditionScheduled is True once the schedule was understood.
	ConditionScheduled = "Scheduled"
	// ConditionRunning is True while the command's Pod runs.
	ConditionRunning = "Running"
	// ConditionDone is True once the command's Pod succeeded or failed.
	ConditionDone = "Done"
)

// AtSpec says what to run, and when.
type AtSpec struct {
	// Schedule is when to run the command, as an RFC 3339 time
	// ("2019-04-12T10:12:00Z"); cnat's minute precision ("2019-04-12T10:12Z")
	// is accepted too. A malformed schedule makes the At Stalled.
	// +kubebuilder:validation:MinLength=1
	Schedule string `json:"schedule"`

	// Command is run once, with sh -c, in a Pod of its own.
	// +kubebuilder:validation:MinLength=1
	Command string `json:"command"`

	// Image runs the command; empty means busybox.
	// +optional
	Image string `json:"image,omitempty"`
}

// AtStatus is what the controller observed.
type AtStatus struct {
	// Phase is PENDING, RUNNING or DONE.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// PodName names the Pod that runs the command, once it exists.
	// +optional
	PodName string `json:"podName,omitempty"`

	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Scheduled, Running, Done, Ready and, for a malformed
	// schedule, Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// At runs a command once, at a scheduled time.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type At struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AtSpec   `json:"spec,omitempty"`
	Status AtStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions (conditions.Getter).
func (a *At) GetConditions() []metav1.Condition { return a.Status.Conditions }

// SetConditions replaces the status conditions (conditions.Setter).
func (a *At) SetConditions(c []metav1.Condition) { a.Status.Conditions = c }

// AtList is a list of At.
//
// +kubebuilder:object:root=true
type AtList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []At `json:"items"`
}

func init() {
	SchemeBuilder.Register(&At{}, &AtList{})
}

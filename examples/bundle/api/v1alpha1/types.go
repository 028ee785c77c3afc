package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types and reasons of a Bundle, besides kstatus' Ready,
// Reconciling and Stalled (github.com/steadyk8s/steady/conditions).
const (
	// AppliedCondition is True when every manifest was applied and what left
	// the list was pruned.
	AppliedCondition = "Applied"
	// MembersCurrentCondition is True when kstatus computes every member
	// Current (a Deployment rolled out, a Namespace Active, ...).
	MembersCurrentCondition = "MembersCurrent"

	// ReasonManifestError: a manifest does not parse or is refused by the
	// API server's validation; fix the Bundle (or its ConfigMap).
	ReasonManifestError = "ManifestError"
	// ReasonConfigMapMissing: a ConfigMap the Bundle lists does not exist
	// (or lacks the key).
	ReasonConfigMapMissing = "ConfigMapMissing"
	// ReasonApplyFailed: the API server failed an apply or a prune; retried.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonApplied: every member applied, nothing left to prune.
	ReasonApplied = "Applied"
	// ReasonMembersNotCurrent: some members are not Current yet.
	ReasonMembersNotCurrent = "MembersNotCurrent"
	// ReasonMembersCurrent: every member is Current.
	ReasonMembersCurrent = "MembersCurrent"
	// ReasonPruning: the Bundle is being deleted and its members with it.
	ReasonPruning = "Pruning"
)

// Source is one entry of a Bundle's manifests: inline YAML or a ConfigMap.
// Exactly one of the two is set.
//
// +kubebuilder:validation:XValidation:rule="has(self.inline) != has(self.configMap)",message="set exactly one of inline and configMap"
type Source struct {
	// Inline holds one or more YAML (or JSON) documents separated by "---".
	// +optional
	Inline string `json:"inline,omitempty"`
	// ConfigMap takes manifests from a ConfigMap in the Bundle's namespace.
	// +optional
	ConfigMap *ConfigMapSource `json:"configMap,omitempty"`
}

// ConfigMapSource names a ConfigMap in the Bundle's namespace whose data
// holds manifests.
type ConfigMapSource struct {
	// Name of the ConfigMap.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key of the data entry to read; empty means every key, in name order.
	// +optional
	Key string `json:"key,omitempty"`
}

// BundleSpec lists the manifests of a Bundle.
type BundleSpec struct {
	// Manifests are the objects of the Bundle. An object that leaves this
	// list is deleted (pruned) from the cluster; an object may be of a kind
	// that a CustomResourceDefinition of the same Bundle defines.
	// +optional
	// +listType=atomic
	Manifests []Source `json:"manifests,omitempty"`
}

// ObjectStatus is what the last apply did to one object.
type ObjectStatus struct {
	// Group of the object's kind; empty for the core group.
	// +optional
	Group string `json:"group,omitempty"`
	// Kind of the object.
	Kind string `json:"kind"`
	// Namespace of the object; empty for a cluster-scoped one.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the object.
	// +optional
	Name string `json:"name,omitempty"`
	// Action is what happened: Applied, Unchanged, Pruned, Detached, Skipped
	// or Failed.
	Action string `json:"action"`
	// Error says why the action failed or was skipped.
	// +optional
	Error string `json:"error,omitempty"`
}

// BundleStatus is the observed state of a Bundle.
type BundleStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready (the summary), Applied, MembersCurrent, and
	// Reconciling or Stalled while the Bundle is being worked on or stuck,
	// as kstatus reads them.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ApplySetID is the applyset.kubernetes.io/id of the Bundle's members.
	// +optional
	ApplySetID string `json:"applySetID,omitempty"`
	// Objects lists what the last apply did to each object.
	// +optional
	// +listType=atomic
	Objects []ObjectStatus `json:"objects,omitempty"`
	// Members counts the objects of the Bundle.
	// +optional
	Members int32 `json:"members,omitempty"`
	// Applied, Unchanged, Pruned and Failed count the actions of the last
	// apply.
	// +optional
	Applied int32 `json:"applied,omitempty"`
	// +optional
	Unchanged int32 `json:"unchanged,omitempty"`
	// +optional
	Pruned int32 `json:"pruned,omitempty"`
	// +optional
	Failed int32 `json:"failed,omitempty"`
}

// Bundle is a list of manifests applied together: it is the ApplySet parent
// (KEP-3659) of the objects it lists, and deleting it deletes them.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels=applyset.kubernetes.io/is-parent-type=true
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Members",type=integer,JSONPath=`.status.members`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Bundle struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BundleSpec   `json:"spec,omitempty"`
	Status BundleStatus `json:"status,omitempty"`
}

// BundleList is a list of Bundles.
//
// +kubebuilder:object:root=true
type BundleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Bundle `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Bundle{}, &BundleList{})
}

// GetConditions returns the Bundle's conditions (conditions.Getter).
func (b *Bundle) GetConditions() []metav1.Condition { return b.Status.Conditions }

// SetConditions replaces the Bundle's conditions (conditions.Setter).
func (b *Bundle) SetConditions(c []metav1.Condition) { b.Status.Conditions = c }

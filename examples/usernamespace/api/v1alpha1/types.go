package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// UserLabel marks the objects made for a User; its value is the User's name.
const UserLabel = "identity.examples.steady.dev/user"

// Condition types and reasons of a User.
const (
	// NamespaceReadyCondition is True while the user's namespace exists and
	// is controlled by the User.
	NamespaceReadyCondition = "NamespaceReady"
	// RBACReadyCondition is True once the user's RoleBinding, ClusterRole and
	// ClusterRoleBinding (and ResourceQuota, if any) are as the spec says.
	RBACReadyCondition = "RBACReady"

	ReasonCreated              = "Created"
	ReasonNamespaceTaken       = "NamespaceTaken"
	ReasonNamespaceTerminating = "NamespaceTerminating"
	ReasonApplyFailed          = "ApplyFailed"
	ReasonWaitingForNamespace  = "WaitingForNamespace"
	ReasonReplacingRoleBinding = "ReplacingRoleBinding"
)

// UserSpec is the desired state of a User.
type UserSpec struct {
	// Groups the user belongs to; each is bound like the user in the user's
	// namespace.
	// +optional
	Groups []string `json:"groups,omitempty"`

	// ClusterRole the user (and its groups) are bound to in the user's
	// namespace.
	// +kubebuilder:default=edit
	// +kubebuilder:validation:MinLength=1
	// +optional
	ClusterRole string `json:"clusterRole,omitempty"`

	// ResourceQuota is the hard limits of the ResourceQuota of the user's
	// namespace; empty means no ResourceQuota.
	// +optional
	ResourceQuota corev1.ResourceList `json:"resourceQuota,omitempty"`
}

// UserStatus is the observed state of a User.
type UserStatus struct {
	// Namespace is the user's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// ObservedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: NamespaceReady, RBACReady and their summary, Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// User is a person with a namespace of their own (the design of Cloudflare's
// user→namespace controller): the User's name is the Kubernetes user name.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 58 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="the name must make a namespace name with the prefix user-: lowercase letters, digits and '-', at most 58 characters"
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.status.namespace`
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.spec.clusterRole`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type User struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   UserSpec   `json:"spec,omitempty"`
	Status UserStatus `json:"status,omitempty"`
}

// GetConditions returns the User's conditions (conditions.Getter).
func (u *User) GetConditions() []metav1.Condition { return u.Status.Conditions }

// SetConditions replaces the User's conditions (conditions.Setter).
func (u *User) SetConditions(c []metav1.Condition) { u.Status.Conditions = c }

// UserList is a list of Users.
//
// +kubebuilder:object:root=true
type UserList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []User `json:"items"`
}

func init() {
	SchemeBuilder.Register(&User{}, &UserList{})
}

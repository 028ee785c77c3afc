package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TenantLabel is the label that makes a namespace join a tenant: its value is
// the Tenant's name. The tenant's children carry it too.
const TenantLabel = "tenancy.examples.steady.dev/tenant"

// Condition types and reasons of a Tenant.
const (
	// NamespaceQuotaCondition is False, with reason ReasonOverQuota, while more
	// namespaces are labelled for the tenant than its namespaceQuota allows.
	NamespaceQuotaCondition = "NamespaceQuota"
	// NamespacesConfiguredCondition is True once every admitted namespace
	// holds the tenant's ResourceQuota, LimitRange, NetworkPolicy and owner
	// RoleBinding.
	NamespacesConfiguredCondition = "NamespacesConfigured"

	ReasonWithinQuota = "WithinQuota"
	ReasonOverQuota   = "OverQuota"
	ReasonConfigured  = "Configured"
	ReasonApplyFailed = "ApplyFailed"

	ReasonWaitingForClusterRoles = "WaitingForClusterRoles"
)

// TenantOwner is the user, group or service account that owns a tenant: it is
// bound to the tenant-owner ClusterRole in each of the tenant's namespaces.
type TenantOwner struct {
	// Kind of the owner.
	// +kubebuilder:validation:Enum=User;Group;ServiceAccount
	Kind string `json:"kind"`
	// Name of the owner.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Namespace of a ServiceAccount owner.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// TenantSpec is the desired state of a Tenant.
type TenantSpec struct {
	// Owner is bound to the tenant-owner ClusterRole in every namespace of
	// the tenant.
	Owner TenantOwner `json:"owner"`

	// NamespaceQuota is how many namespaces the tenant may have; unset means
	// no limit. Namespaces beyond it (the newest) get none of the tenant's
	// objects and are reported in the NamespaceQuota condition.
	// +kubebuilder:validation:Minimum=0
	// +optional
	NamespaceQuota *int32 `json:"namespaceQuota,omitempty"`

	// ResourceQuota is the hard limits of the ResourceQuota put in each
	// namespace of the tenant.
	// +optional
	ResourceQuota corev1.ResourceList `json:"resourceQuota,omitempty"`

	// LimitRanges are the items of the LimitRange put in each namespace of
	// the tenant.
	// +optional
	LimitRanges []corev1.LimitRangeItem `json:"limitRanges,omitempty"`

	// AllowIngressFrom are the peers, besides the tenant's own namespaces,
	// that the tenant's NetworkPolicy lets in. Everything else is denied.
	// +optional
	AllowIngressFrom []networkingv1.NetworkPolicyPeer `json:"allowIngressFrom,omitempty"`
}

// TenantStatus is the observed state of a Tenant.
type TenantStatus struct {
	// Namespaces are the tenant's admitted namespaces, sorted: those labelled
	// with the tenant's name, within its namespace quota.
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`

	// Size is the number of admitted namespaces.
	// +optional
	Size int32 `json:"size,omitempty"`

	// ObservedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: NamespaceQuota, NamespacesConfigured and their summary,
	// Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Tenant is a group of namespaces with one owner and the same quota, limits
// and network isolation (the design of Capsule, https://capsule.clastix.io).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Owner",type=string,JSONPath=`.spec.owner.name`
// +kubebuilder:printcolumn:name="Quota",type=integer,JSONPath=`.spec.namespaceQuota`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.status.size`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Tenant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TenantSpec   `json:"spec,omitempty"`
	Status TenantStatus `json:"status,omitempty"`
}

// GetConditions returns the Tenant's conditions (conditions.Getter).
func (t *Tenant) GetConditions() []metav1.Condition { return t.Status.Conditions }

// SetConditions replaces the Tenant's conditions (conditions.Setter).
func (t *Tenant) SetConditions(c []metav1.Condition) { t.Status.Conditions = c }

// TenantList is a list of Tenants.
//
// +kubebuilder:object:root=true
type TenantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Tenant `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Tenant{}, &TenantList{})
}

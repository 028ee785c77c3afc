package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeletionPolicy says what happens to the bucket in object storage when the
// Bucket is deleted.
// +kubebuilder:validation:Enum=Delete;Retain
type DeletionPolicy string

const (
	// DeletionPolicyDelete deletes the bucket in object storage with the
	// Bucket. The bucket must be empty: the operator never deletes data;
	// until it is, the Bucket stays, Deleting says why, and deletion is
	// retried with backoff.
	DeletionPolicyDelete DeletionPolicy = "Delete"
	// DeletionPolicyRetain leaves the bucket in object storage.
	DeletionPolicyRetain DeletionPolicy = "Retain"
)

// Condition types of a Bucket, besides Ready (the summary of BucketReady and
// CredentialsReady) and Stalled (a bucket name that cannot be used).
const (
	// ConditionBucketReady is True when the bucket exists in object storage
	// as the spec says.
	ConditionBucketReady = "BucketReady"
	// ConditionCredentialsReady is True when the credentials Secret is
	// written.
	ConditionCredentialsReady = "CredentialsReady"
	// ConditionDeleting is True while the Bucket is being deleted; its
	// reason says how the external bucket fares (Deleted, Retained, or the
	// S3 error code of a failed delete, BucketNotEmpty say).
	ConditionDeleting = "Deleting"
)

// BucketSpec is the bucket wanted in object storage.
//
// +kubebuilder:validation:XValidation:rule="has(self.bucketName) == has(oldSelf.bucketName) && (!has(self.bucketName) || self.bucketName == oldSelf.bucketName)",message="bucketName is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.region) == has(oldSelf.region) && (!has(self.region) || self.region == oldSelf.region)",message="region is immutable"
type BucketSpec struct {
	// BucketName is the bucket's name in object storage; empty means
	// "<namespace>-<name>". Immutable.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9.-]*[a-z0-9]$`
	// +optional
	BucketName string `json:"bucketName,omitempty"`

	// Region to create the bucket in; empty means the operator's default.
	// Immutable.
	// +optional
	Region string `json:"region,omitempty"`

	// Versioning keeps every version of every object. Turned off again,
	// versioning is suspended (S3 cannot unversion a bucket).
	// +optional
	Versioning bool `json:"versioning,omitempty"`

	// DeletionPolicy is Delete (the default) or Retain.
	// +kubebuilder:default=Delete
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
}

// BucketStatus is what the controller observed.
type BucketStatus struct {
	// BucketName is the bucket's name in object storage.
	// +optional
	BucketName string `json:"bucketName,omitempty"`

	// Endpoint is the URL of the object storage.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// Versioning is the bucket's versioning state: Enabled, Suspended, or
	// empty for a bucket never versioned.
	// +optional
	Versioning string `json:"versioning,omitempty"`

	// SecretName names the Secret with the endpoint, bucket name, region and
	// credentials, for the bucket's consumers.
	// +optional
	SecretName string `json:"secretName,omitempty"`

	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: BucketReady, CredentialsReady, Ready, Deleting, Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Bucket is a bucket in S3-compatible object storage, with a Secret that tells
// its consumers how to reach it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Bucket",type=string,JSONPath=`.status.bucketName`
// +kubebuilder:printcolumn:name="Policy",type=string,JSONPath=`.spec.deletionPolicy`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Bucket struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BucketSpec   `json:"spec,omitempty"`
	Status BucketStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions (conditions.Getter).
func (b *Bucket) GetConditions() []metav1.Condition { return b.Status.Conditions }

// SetConditions replaces the status conditions (conditions.Setter).
func (b *Bucket) SetConditions(c []metav1.Condition) { b.Status.Conditions = c }

// BucketList is a list of Bucket.
//
// +kubebuilder:object:root=true
type BucketList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Bucket `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Bucket{}, &BucketList{})
}

// Package v1alpha1 is the API of the bucket example: a Bucket is a bucket in
// S3-compatible object storage (AWS S3, MinIO, ...).
//
// +kubebuilder:object:generate=true
// +groupName=s3.examples.steadyk8s.io
package v1alpha1

//go:generate go tool controller-gen object paths=.

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "s3.examples.steadyk8s.io", Version: "v1alpha1"}

	// SchemeBuilder registers this API's types.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Package v1alpha1 is the identity.examples.steady.dev/v1alpha1 API of the
// usernamespace example: a cluster-scoped User that gets its own namespace.
//
// +kubebuilder:object:generate=true
// +groupName=identity.examples.steady.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

//go:generate go tool controller-gen object paths=.

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "identity.examples.steady.dev", Version: "v1alpha1"}

	// SchemeBuilder registers this API's types.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

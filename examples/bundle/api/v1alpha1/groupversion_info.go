// Package v1alpha1 is the bundle.examples.steady.dev/v1alpha1 API of the
// bundle example: a namespaced Bundle that lists manifests and is the
// ApplySet parent of the objects they describe.
//
// +kubebuilder:object:generate=true
// +groupName=bundle.examples.steady.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

//go:generate go tool controller-gen object paths=.

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "bundle.examples.steady.dev", Version: "v1alpha1"}

	// SchemeBuilder registers this API's types.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Package v1alpha1 is the API of the at example: an At runs a command once,
// at a scheduled time, the cnat "At" of "Programming Kubernetes".
//
// +kubebuilder:object:generate=true
// +groupName=cnat.examples.steadyk8s.io
package v1alpha1

//go:generate go tool controller-gen object paths=.

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "cnat.examples.steadyk8s.io", Version: "v1alpha1"}

	// SchemeBuilder registers this API's types.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

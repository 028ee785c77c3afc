// Package v1alpha1 is the API of the memcached example: the Memcached kind
// of kubebuilder's getting-started tutorial, as its scaffold makes it
// (conditions in a []metav1.Condition field, no methods, no
// observedGeneration).
//
// +kubebuilder:object:generate=true
// +groupName=cache.examples.steadyk8s.io
package v1alpha1

//go:generate go tool controller-gen object paths=.

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is group version used to register these objects.
	GroupVersion = schema.GroupVersion{Group: "cache.examples.steadyk8s.io", Version: "v1alpha1"}

	// SchemeBuilder is used to add go types to the GroupVersionKind scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types in this group-version to the given scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Package v1 is the API package of the documentation's Bucket kind, as
// kubebuilder scaffolds it. The types themselves are in docs/conditions.md
// (the block "// file: api/v1/bucket_types.go"); docs_test.go puts them here
// before it compiles the documentation's code.
//
// +kubebuilder:object:generate=true
// +groupName=storage.example.com
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the Bucket kind.
	GroupVersion = schema.GroupVersion{Group: "storage.example.com", Version: "v1"}
	// SchemeBuilder registers the types of this group-version.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}
	// AddToScheme adds the types of this group-version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

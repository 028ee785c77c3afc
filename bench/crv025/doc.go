// Package crv025 runs applyset on controller-runtime v0.25.2 (and k8s.io
// v0.37), a module apart so that the library's go.mod keeps v0.24.1: there,
// a delete through PartialObjectMetadata needs the client's scheme to know
// the kind, and pruning a CRD with a scheme without apiextensions failed.
package crv025

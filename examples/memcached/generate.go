// Package memcached is a kubebuilder project moved to steady: the memcached
// operator of kubebuilder's getting-started tutorial, with the scaffold's
// layout, API type, RBAC markers, Ginkgo suite and tests, and its
// controller's body written with steady (docs/kubebuilder.md walks through
// the change). The API is in api/v1alpha1, the controller in
// internal/controller, the CRD and RBAC that controller-gen makes in config.
package memcached

//go:generate go tool controller-gen crd rbac:roleName=memcached-manager paths=./... output:crd:dir=config/crd/bases output:rbac:dir=config/rbac

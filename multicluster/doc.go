// Package multicluster runs steady's helpers in a multicluster-runtime
// (sigs.k8s.io/multicluster-runtime) controller: one controller, a fleet of
// clusters, each request carrying its cluster's name.
//
// [For] is steady's reconcile.For across a fleet: for a request of cluster
// "eu-1", it reads, runs the body and writes with eu-1's client and API
// reader, never another cluster's. [New] does the same for any
// controller-runtime reconciler built per cluster. Both are multicluster
// runnables: the manager's provider engages them, so a cluster that joins
// gets its reconciler and one that leaves drops it.
//
// What steady keeps per process, and why it does not leak from one
// cluster to another, is in docs/multicluster.md. This module is apart
// from the library's, so that the library does not depend on
// multicluster-runtime.
package multicluster

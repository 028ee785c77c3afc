// Package steady makes the client that steady's helpers remember through:
// one call per manager (or per cluster of a fleet), whose result every
// reconciler of that manager uses.
//
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme})
//	...
//	c := steady.NewClient(mgr)
//	r, err := reconcile.For(c, reconcileBucket)
//
// The client is the manager's own (cached) client, and it carries what
// steady remembers of the manager's cluster:
//
//   - the resourceVersion of each write this process made through it and
//     the cache has not shown yet, so that [reconcile.For] and
//     [reconcile.Patcher] never compute from a state older than their own
//     write, and ownership reads a child it has just created through the
//     API reader instead of creating it again;
//   - ownership's verdicts on children ("only the API server's defaults
//     differ": nothing to write), so a converged child costs no request;
//   - what was learned of the cluster's kinds (a status subresource, a
//     namespaced kind).
//
// What it remembers of an object ends when the manager's informer shows
// the object deleted, or goes past this process's write of it without
// holding the object (the deletion's event came before the write's answer,
// or the object is outside the cache's selectors): it is bounded by what
// the cache already holds, never by a count or a time. It is never
// shared: two
// managers, two clusters of a fleet or two tests in one process each have
// their own, and it lives as long as the manager's cache (whose informers
// hold its event handlers). Take one per manager and hand it to every
// reconciler, so that they know each other's writes;
// [reconcile.NewController] given none makes one of its own from its
// manager.
//
// The helpers work with any client. With one that carries nothing (a
// client of the manager wrapped by other code, a direct client),
// [reconcile.For] keeps its own ledger of its writes, which its reads end,
// and nothing else: ownership's calls then remember nothing between calls
// (right, but a converged child with server defaults may cost a write the
// API server finds nothing in, and a child created a moment ago that the
// cache does not show yet costs a create refused as AlreadyExists).
package steady

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/steadyk8s/steady/internal/scope"
)

// NewClient returns cl's client (a manager's: cached) carrying what steady
// remembers of cl's cluster, made anew: its API reader is cl's, and cl's
// cache ends what it remembers of each object (see the package
// documentation). Call it once per manager or cluster and share the
// client; two calls remember apart.
func NewClient(cl cluster.Cluster) client.Client {
	c := cl.GetClient()
	return scope.Wrap(c, scope.New(c, cl.GetAPIReader(), cl.GetCache()))
}

// Package indexer declares typed field indexes on the informer cache, so that
// "which of these objects point at X" is one map lookup instead of a list of
// every object filtered in a loop.
//
// Declare an index once, as a package variable, register it on the manager
// before it starts, and query it with a typed helper:
//
//	var PodsByNode = indexer.New("spec.nodeName", func(p *corev1.Pod) []string {
//		return []string{p.Spec.NodeName}
//	})
//
//	// in main, or in each controller's SetupWithManager:
//	if err := PodsByNode.Register(ctx, mgr.GetFieldIndexer()); err != nil { ... }
//
//	// in Reconcile (r.Client is the manager's client; mgr.GetCache() works too):
//	pods, err := PodsByNode.Find(ctx, r.Client, r.Scheme, node.Name)
//
// Registering the same declaration (the same *Index) on the same cache
// again, from two controllers, is a no-op; a different declaration under
// the same name and type is an error ("another index ... is already
// registered on this cache"): a programming mistake, not a condition to
// branch on. An *Index remembers the caches it was added to by identity,
// without keeping them alive: a new manager's cache is never mistaken for
// a stopped one's. [ControllerOwner]'s index needs no memory: its name is
// its own.
//
// Querying an index the reader does not have is a [*NotRegisteredError]
// that says how to register it, on every call: a cache without the index
// answers without a request, a direct client with its API server's
// refusal of the field selector, asked each time (nothing is remembered).
//
// Ready-made: [ControllerOwner] indexes objects by their controller (find the
// children of an owner with [OwnerKey]).
package indexer

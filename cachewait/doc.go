// Package cachewait gives informer-cache clients read-your-writes: after a
// write, wait until the cache holds it, or learn without blocking that it
// does not yet and requeue.
//
// A controller-runtime client reads from the informer cache and writes to
// the API server, so right after a write the cache may still hold the old
// state, and a reconciler that counts its children in the cache creates
// duplicates. Three ways out, from the simplest:
//
//   - Block: [ForWrite] after a create, update or patch waits until the cache
//     holds the object at a resourceVersion at least as new; [ForDelete] after
//     a delete waits until the cache no longer holds that UID.
//   - Wrap: [NewClient](mgr) wraps the manager's client so that it
//     remembers its own writes and makes later Gets and Lists of the same
//     kind wait for them; a read that must not wait goes through the
//     manager's own client.
//   - Track: a [Tracker] ([NewTracker](mgr)) records the children written
//     for an owner and answers without blocking whether the cache has caught
//     up for it, for the caller to requeue when not.
//
// A wait that runs out returns a [*TimeoutError]: the write succeeded, so
// requeue and read again; it is not a failure. The cache alone cannot tell
// an object someone else deleted from one it has not seen yet: one live GET
// through the API reader does, once the cache has lagged a second. A client
// of NewClient and a Tracker take the manager's API reader; give ForWrite
// [WithAPIReader], or such a wait ends in a timeout. The options are
// [WithTimeout], [WithAPIReader] and [WithCacheOptions] (for a cache limited
// by namespaces or label selectors).
//
// The guide, docs/cachewait.md in the repository, covers when the cache
// counts as caught up for each write, delete, DeleteAllOf and read, the
// requests it costs, and controller-runtime v0.25's experimental
// read-your-writes client (do not wrap that one in NewClient: each read
// would wait twice).
package cachewait

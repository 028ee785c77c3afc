// Package cachewait gives informer-cache clients read-your-writes: after a
// write, wait until the cache holds it, or learn without blocking that it
// does not yet and requeue.
//
// A controller-runtime client reads from the informer cache and writes to
// the API server, so right after a write the cache may still hold the old
// state, for milliseconds or, on a loaded cluster, seconds. A reconciler that
// counts its children in the cache and creates the missing ones then creates
// duplicates (cluster-api #13649). Three ways out, from the simplest:
//
//   - Block: [ForWrite] after a create, update or patch waits until the cache
//     holds the object at a resourceVersion at least as new; [ForDelete] after
//     a delete waits until the cache no longer holds that UID. Both back off
//     exponentially from microseconds, within the context, and return a
//     [*TimeoutError] that callers treat as "requeue", not as failure.
//   - Wrap: [NewClient] wraps the manager's client so that it remembers its
//     own writes and makes later Gets and Lists of the same kind wait for
//     them; pass [NoWait]{} to a read that must not wait.
//   - Track: a [Tracker] records "wrote child X for owner O at resourceVersion
//     r" and answers "is the cache caught up for O?" with a requeue delay
//     when not, without blocking (the owner-keyed style of KEP-5647 and
//     cluster-api's util/controller/consistency).
//
// # Options
//
// Waits take [WaitOption]s: [WithTimeout], [WithBackoff] and [WithAPIReader];
// a Tracker takes [TrackerOption]s: [WithRequeue], [WithTTL] and
// [WithAPIReader]. No option means the defaults (a 10s timeout).
//
// # When is the cache caught up?
//
// Versions are compared with apimachinery's resourceversion.CompareResourceVersion
// (KEP-5504); where they do not compare, only the very version written counts
// as caught up. An object that is gone never keeps a read waiting:
//
//   - A write whose answer is marked for deletion with no finalizer left
//     and no grace period pending (removing the last finalizer released the
//     object, as reconcile.For does on every deletion) is caught up once the
//     cache no longer holds that UID. No request is made. (A Pod terminating
//     gracefully, or a Namespace its spec.finalizers hold, is marked with
//     no finalizer but stays: a write to it is waited for as any other.)
//   - A write is caught up when the cache holds the object at that version
//     or newer, or, having been seen holding the UID, no longer holds it
//     (the deletion came after the write). When the cache lacks the object
//     and never held it, the cache alone cannot tell "created, not seen yet"
//     from "created and deleted since": with [WithAPIReader] (the manager's
//     GetAPIReader()), once the cache has lagged After (1s by default), one
//     live GET decides: NotFound or another UID is caught up, the same UID
//     means wait (asking again at most once per After). A cache that catches
//     up within After costs no request. Without an API reader such a wait
//     ends in one [*TimeoutError].
//   - A [Client] or [Tracker] Delete is caught up when the cache no longer
//     holds the UID or holds it marked for deletion: an object another
//     finalizer holds is Terminating, which is what a live read shows too,
//     and neither Lists nor Gets wait for it to go. Where a write of the
//     object was still pending when it was deleted, absence counts only
//     once the cache has been seen holding it, or the API reader says so.
//     [ForDelete] waits for the UID to go.
//   - A [Client]'s DeleteAllOf is caught up when the cache holds no object
//     of the kind in the namespace that matches its label selector and is
//     not marked for deletion, leaving out objects the Client wrote later
//     and, with an API reader, objects the API server shows alive and
//     unmarked (created later, or excluded by a field selector, which is
//     not applied to the cache).
//   - An expectation that timed out is dropped: the read that waited gets
//     the [*TimeoutError], later reads do not wait for it again (where the
//     read's own context ended first, the next read waits again). Dry runs
//     (client.DryRunAll) and failed writes are not remembered.
//
// Waits are observed in the steady_cachewait_wait_seconds histogram of
// controller-runtime's metrics registry, by kind and result (caught_up,
// timeout, error).
//
// # controller-runtime v0.25's read-your-writes client
//
// controller-runtime v0.25 (checked against v0.25.2, which needs k8s.io
// v0.37) ships an experimental, off-by-default equivalent of [Client]:
// client.CacheOptions.EnableReadYourWritesConsistency (set through
// client.Options.Cache, which the manager fills from ctrl.Options.Client).
// With it the manager's client records, per kind and representation
// (typed, unstructured, metadata), the resourceVersion of each Create,
// Update, Patch, Apply and status Update, Patch and Apply, and the UID of
// each Delete; a Get waits for the writes of its name and a List for all
// writes of its kind. It does not count, as cachewait does, whether the
// cache holds each object: an event handler on the informer remembers the
// highest resourceVersion the informer delivered, and a read waits until
// that reaches the written one; deletes wait for the informer's delete
// event of that UID or, when the delete's answer carries a resourceVersion
// (its comment: only when the object stays in storage, say for a
// finalizer), for that version. Comparing with the
// highest version seen for the kind makes an object deleted since the write
// caught up without any request. Reads opt out with
// client.DisableReadYourWritesConsistency, which writes accept too so as
// not to hold back later reads; waits are observed in
// controller_runtime_client_consistency_wait_duration_seconds; DeleteAllOf
// returns an error on that client ("use List and Delete instead"), and its
// documentation says it does not work correctly for a resource with more
// than one namespace configured in the cache.
//
// On controller-runtime v0.24, which steady targets, cachewait gives the
// same reads. Move to the built-in client once on v0.25 and its
// experimental status suits you; keep [ForWrite] for a single wait after a
// write made elsewhere (reconcile.WithCacheWait), and [Tracker] for the
// non-blocking, requeue-instead-of-wait style, neither of which v0.25
// offers. Do not wrap a v0.25 consistent client in [NewClient]: each read
// would wait twice for the same writes.
package cachewait

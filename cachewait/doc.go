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
//   - Wrap: [NewClient](mgr) wraps the manager's client so that it
//     remembers its own writes and makes later Gets and Lists of the same
//     kind wait for them; a read that must not wait goes through the
//     manager's own client.
//   - Track: a [Tracker] ([NewTracker](mgr)) records "wrote child X for
//     owner O at resourceVersion r" and answers "is the cache caught up for
//     O?" without blocking, for the caller to requeue when not (the owner-keyed
//     style of KEP-5647 and cluster-api's util/controller/consistency).
//
// # Options
//
// Waits, a client of [NewClient] and a Tracker take [WaitOption]s:
// [WithTimeout] (which a Tracker, never waiting, ignores), [WithAPIReader]
// and [WithCacheOptions]. No option means the defaults (a 10s timeout; for
// a client of NewClient and a Tracker, the manager's API reader asked after
// 1s).
//
// # When is the cache caught up?
//
// Versions are compared with apimachinery's resourceversion.CompareResourceVersion
// (KEP-5504); where they do not compare, only the very version written counts
// as caught up. An object that is gone never keeps a read waiting out the
// timeout where the API reader is at hand (a Client's and a Tracker's
// default):
//
//   - A write whose answer is marked for deletion with no finalizer left
//     and no grace period pending (removing the last finalizer released the
//     object, as reconcile.For does on every deletion) is caught up once the
//     cache no longer holds that UID. No request is made. (A Pod terminating
//     gracefully, or a Namespace its spec.finalizers hold, is marked with
//     no finalizer but stays: a write to it is waited for as any other.)
//   - A write is caught up when the cache holds the object at that version
//     or newer, or, having been seen holding the UID, no longer holds it
//     (the deletion came after the write), or holds a newer object of the
//     name. When the cache lacks the object and never held it, the cache
//     alone cannot tell "created, not seen yet" from "created and deleted
//     since": once the cache has lagged After (1s by default), one live GET
//     through the API reader decides: NotFound or another UID means gone,
//     the same UID means wait (asking again at most once per After). A cache
//     that catches up within After costs no request. Without an API reader
//     (ForWrite without [WithAPIReader], a Cluster without one) such a wait
//     ends in one [*TimeoutError].
//   - A Delete through a client of [NewClient], or told a [Tracker], is
//     caught up when the cache no longer holds the UID or holds it marked
//     for deletion: an object another finalizer holds is Terminating,
//     which is what a live read shows too, and neither Lists nor Gets wait
//     for it to go. Where a write of the
//     object was still pending when it was deleted, the cache may never
//     have seen it, and its absence tells nothing until the API reader says
//     it was removed (not only marked). [ForDelete] waits for the UID to go.
//   - A Client's Delete of an object named only (no UID, no preconditions)
//     is made with a UID precondition, from the Client's pending write of
//     it or from the cache (in the representation of the Client's last
//     read of the kind; no request); when another object has taken the
//     name (409), the API reader tells which and the delete is made again.
//     Reads then wait for that UID: a recreated object of the name is a
//     newer one and keeps nothing waiting. A delete without a UID (nothing
//     known of the name; a Tracker's Deleted of a child named only) is
//     caught up when the cache lacks the name, holds it marked, or holds an
//     object the API reader shows alive and unmarked after the delete,
//     which was created since.
//   - A DeleteAllOf of a client of [NewClient] is caught up when the cache holds no object
//     of the kind in the namespace that matches its label selector and is
//     not marked for deletion, leaving out objects the Client wrote later
//     and objects the API server shows alive and unmarked (created later,
//     or excluded by a field selector, which is not applied to the cache).
//   - A read waits only for what it can select: a Get for its name, a List
//     for its namespace and, where it has a label selector, for writes
//     whose object matches it as written or as the cache holds it (a write
//     that takes an object out of the selector is waited for while the
//     cache still shows it inside).
//   - With [WithCacheOptions] (the manager's cache options), a write the
//     cache cannot hold (outside its namespaces or label selector) is not
//     waited for; one that takes an object the cache holds out of it is
//     caught up when the cache drops the object. A write in a namespace the
//     cache does not watch at all is dropped when a read first meets it.
//   - Where the cache is not seen past a write but a read would show
//     nothing older than it (the object is absent, having never been seen,
//     and the API reader says it is gone; or the read does not select it),
//     the read goes on, and the write is kept: later reads check it again,
//     and a read whose result holds an older state of the object (the cache
//     moved meanwhile) reads again.
//   - An expectation that timed out is dropped: the read that waited gets
//     the [*TimeoutError], later reads do not wait for it again (where the
//     read's own context ended first, the next read waits again). Dry runs
//     (client.DryRunAll) and failed writes are not remembered.
//
// # Cost
//
// Waiting reads the cache only. The API reader is asked only where the
// cache has lagged After since the write, at most once per After for each
// write, and not again once it has said gone: one GET for a write whose
// object the cache never showed, one LIST for a DeleteAllOf whatever the
// number of objects the cache still holds (again only for objects that
// appeared in the cache since). A delete by name costs nothing more where
// the Client wrote the object or read the kind, one GET and one DELETE
// more where someone else took the name meanwhile.
//
// Waits are observed in the steady_cachewait_wait_seconds histogram of
// controller-runtime's metrics registry, by kind and result (caught_up,
// timeout, error).
//
// # controller-runtime v0.25's read-your-writes client
//
// controller-runtime v0.25 (checked against v0.25.2, which needs k8s.io
// v0.37) ships an experimental, off-by-default equivalent of [NewClient]:
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

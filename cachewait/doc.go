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
//     them; pass [NoWait] to a read that must not wait.
//   - Track: a [Tracker] records "wrote child X for owner O at resourceVersion
//     r" and answers "is the cache caught up for O?" with a requeue delay
//     when not, without blocking (the owner-keyed style of KEP-5647 and
//     cluster-api's util/controller/consistency).
//
// Versions are compared with apimachinery's resourceversion.CompareResourceVersion
// (KEP-5504); where they do not compare, only the very version written counts
// as caught up. Waits are observed in the steady_cachewait_wait_seconds
// histogram of controller-runtime's metrics registry.
package cachewait

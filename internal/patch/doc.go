// Package patch is the one write engine behind reconcile.Patcher and
// finalizer.Handler: it writes the difference between a snapshot of an
// object and the object as changed, as JSON merge patches (status to the
// status subresource, the rest to the object), and keeps other writers' data.
//
// What it guarantees, once, for both callers:
//
//   - The difference is taken on the JSON of the two objects, so any shape
//     of object works (typed or unstructured) and every removal is written
//     as a null; empty objects that exist only because a parent struct is
//     not omitted ({"topology":{}} where there was no topology) are pruned.
//   - Lists that a merge patch replaces whole and that other writers also
//     change are rebased on the latest state of the object before each
//     write: metadata.finalizers (by value), metadata.ownerReferences (by
//     uid) and condition lists (by type, entries kept as JSON objects of any
//     shape, as far as the object's Go type reads them: a typed object
//     drops the fields its types lack). Only the entries this change
//     added, changed or removed are touched; every other entry stays as
//     the latest writer has it. Dropping the last of our labels or
//     annotations removes them key by key, not the whole map. Whenever
//     such a list is sent the write is locked on the resourceVersion the
//     list was rebased on; after a status write, the second write rebases on
//     the status write's answer.
//   - Every write carries the snapshot's metadata.uid as a precondition
//     (its refusal, or a re-read that finds a newer object under the name,
//     ends the write as gone): a recreated object is never written. The
//     status subresource ignores a uid in the patch (its strategy takes
//     metadata from the stored object), so status writes are always locked
//     on the resourceVersion instead, and rebased on a conflict like the
//     lists.
//   - Dropping a whole map (a null where the snapshot had a map) removes it
//     whole only where the latest map holds no key we did not read, and
//     then under a resourceVersion lock; otherwise it removes the keys we
//     read one by one, so a key another writer added since is kept.
//     Labels and annotations are always removed key by key.
//   - Re-reads after a conflict go to Reader (the API server when the caller
//     gave an API reader). A re-read that returns the resourceVersion that
//     just conflicted, or an older one, is stale (a lagging cache): it is
//     repeated with backoff until the reader catches up. Through a cache, a
//     NotFound or an older object under the name is never taken for gone.
//
// # When ours is older than live
//
// At scale a reconcile often starts from a snapshot older than the live
// object. What the engine does then, per kind of field (rebase.go, body.go,
// ledger.go):
//
//   - The whole snapshot, against this process's own writes: every write's
//     answer is recorded by UID (the ledger). A snapshot older than our own
//     last write is refused with Options.CheckOwnWrites (the Patcher sets
//     it): nothing is written and Result.Stale says why, since a change
//     judged against it may be none where the live object needs one.
//     reconcile.For reads its own writes before its body, so it never
//     starts from such a snapshot.
//   - Monotonic counters: status.observedGeneration is never written lower
//     than the live value: with Options.ObservedGeneration, a status whose
//     snapshot generation is lower than the live observedGeneration is not
//     written (Result.Stale). A status computed from an older generation
//     than the live one, where nothing live claims a newer one, is written
//     with the generation it was computed from, never the live one. A
//     condition of ours whose observedGeneration is lower than the live
//     entry's leaves the whole status unwritten (Result.Stale).
//   - Timestamps: a condition of ours whose status equals the live entry's
//     keeps the live lastTransitionTime (it did not flip), so an entry that
//     equals the live one but for that time is no change and is not sent.
//   - Ordered lists: the caller's order is written (a sorted condition list
//     stays sorted); an entry only the latest has (another writer's) keeps
//     its place after the entry that precedes it there.
//   - Keyed lists (finalizers, ownerReferences, conditions): entries this
//     change added, changed or removed, and owned conditions, take our
//     value; every other entry stays as live has it, and one live lacks
//     stays gone.
//   - Maps: only the keys this change set or removed are sent; a map
//     dropped whole keeps every key we never read (see above).
//   - Scalars this change set: ours wins (the last writer's value); fields
//     it did not change are not sent.
package patch

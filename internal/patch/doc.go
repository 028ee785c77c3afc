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
//   - Re-reads after a conflict go to Reader (the API server when the caller
//     gave an API reader). A re-read that returns the resourceVersion that
//     just conflicted, or an older one, is stale (a lagging cache): it is
//     repeated with backoff until the reader catches up. Through a cache, a
//     NotFound or an older object under the name is never taken for gone.
package patch

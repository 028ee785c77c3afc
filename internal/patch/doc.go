// Package patch is the one write engine behind reconcile.Patcher and
// finalizer.Handler: it writes the difference between a snapshot of an
// object and the object as changed, as JSON merge patches (status to the
// status subresource, the rest to the object), and keeps other writers' data.
//
// The difference is taken on the JSON of the two objects (plan.go), so any
// shape of object works, typed or unstructured, and every removal is
// written as a null; prune drops the empty objects that change nothing.
// Only the scalars and map keys this change set or removed are sent, and
// ours win; a map dropped whole keeps the keys another writer added since
// (mapDrop), and, on a typed object, those its Go type does not hold (the
// object's managedFields name them), and labels and annotations are always
// removed key by key.
//
// Lists that a merge patch replaces whole and that other writers also
// change are rebased on the latest object before each write (rebase.go,
// list.rebase): metadata.finalizers by value, metadata.ownerReferences by
// uid, condition lists by type (status.conditions and Options.ConditionLists),
// entries kept as JSON objects of any shape as far as the object's Go type
// reads them (a typed object drops the fields its types lack). A write that
// sends such a list, or removes a whole map, is locked on the resourceVersion
// it was rebased on (body.go). Every write carries the snapshot's
// metadata.uid as a precondition, so a recreated object is never written;
// the status subresource ignores a uid in the patch (its strategy takes
// metadata from the stored object), so status writes are always locked on
// the resourceVersion instead, and rebased on a conflict like the lists.
// After a status write, the second write rebases on the status write's
// answer. Re-reads after a conflict go to Writer.Reader (write.go,
// Writer.reread says when a read is stale and when the object is gone).
//
// # When ours is older than live
//
// At scale a reconcile often starts from a snapshot older than the live
// object. The engine never writes the past:
//
//   - With Options.CheckOwnWrites (the Patcher sets it), a snapshot older
//     than this process's own last write of the object, as internal/scope's
//     ledger records it by UID, is refused: nothing is written and
//     Result.Stale says why, since a change judged against it may be none
//     where the live object needs one. reconcile.For reads its own writes
//     before its body, so it never starts from such a snapshot.
//   - With Options.ObservedGeneration, a status computed from a generation
//     lower than the live status.observedGeneration (one no higher than the
//     live generation) is not written (Result.Stale). A status computed
//     from an older generation than the live one, where nothing live claims
//     a newer one, is written with the generation it was computed from,
//     never the live one. A condition of ours older than the live entry
//     leaves the whole status unwritten (list.rebase says when an entry is
//     older, and what the rebase does with order and lastTransitionTime).
package patch

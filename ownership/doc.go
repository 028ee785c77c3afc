// Package ownership creates and updates the children of an owner with a
// controller reference, writing only when the child differs from what the
// caller wants, removals included.
//
//	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name}}
//	op, err := ownership.CreateOrUpdate(ctx, r.Client, app, deploy, func() error {
//		deploy.Spec = desiredSpec(app) // wholesale: the server's defaults are dropped here
//		return nil
//	})
//
// # How a change is found
//
// [CreateOrUpdate] reads the child, runs mutate on it and compares the result with the live object exactly (as JSON; the metadata
// the API server owns, such as resourceVersion and managedFields, left
// out; absent and empty labels, annotations, owner references and
// finalizers the same). A dropped label, a bool set to false, a number set
// to 0, an emptied list or map is a difference.
//
// A wholesale assignment such as deploy.Spec = desired drops the fields the
// API server defaulted, so the mutated child differs from the live one
// every time although nothing the caller wants is missing
// (controller-runtime #2733: controllerutil writes on every reconcile). The
// write is sent then (it carries the resourceVersion read), and the API server, which defaults the
// missing fields again, finds nothing to change: it stores nothing, keeps
// the resourceVersion and fires no watch event, and the result is
// unchanged. Cost per call: one GET when nothing differs, compared on the
// Go values first, without JSON work; one more request, the write, when
// something differs. Through a manager's cached client the GET is a cache
// read. The verdict "only defaults differ" is remembered per child (UID
// and resourceVersion) and desired object (a digest), so a converged child
// that nobody changed
// costs no request at all through a manager's cached client; any change of
// the child or of the desired state asks again. [Apply] likewise sends
// nothing when neither the child nor what it applies changed since its last
// apply. Both memories belong to the client the call is given when it
// carries one (steady.NewClient), else to the one of the reconcile.For
// (reconcile.NewController's) whose context the call runs in, and last
// until the manager's informer shows the child deleted; a call with
// neither, or in a For whose client carries none (which has no informers
// to end them), remembers nothing between calls.
//
// # Writes, stale reads and other writers
//
// CreateOrUpdate sends the whole object with the resourceVersion it read:
// a child changed since (a stale cache) is a conflict error to requeue on,
// never an overwrite. It writes status only with the object, for kinds
// without a status subresource; for kinds with one it does not compare
// status either (it cannot write it; a child's status is its own
// controller's to write). Results are controllerutil's:
// created, updated, unchanged; beside an
// error, what was written before it, or an empty result (controllerutil says
// unchanged there), never unchanged. A write the API server refuses because
// it changes an immutable field (a Job's template) says so, and how to set
// such a field: only when the child is created.
//
// A whole-object write removes what mutate does not set again, another
// writer's fields included (it logs each field another field manager set
// that it removes). A child that others edit too (an autoscaler's
// replicas, kubectl rollout restart's annotation, a webhook's additions)
// is [Apply]'s: server-side apply sends, owns and compares only the
// fields you set, so what another writer set is kept.
//
// Typed and unstructured children behave the same; the caller's object is
// never changed by the comparison, and on success holds the live object.
//
// # References
//
// The controller reference is set inside the mutate path. A child controlled
// by another owner is an [*AlreadyOwnedError] naming both, never stolen;
// [Adopt]{} takes it over explicitly. References the API server or the
// garbage collector would reject are an error naming the owner, the child
// and the field, before any write: a namespaced owner of a cluster-scoped
// child, an owner in another namespace, an owner without a UID (and a
// child without a namespace under a namespaced owner). The last two are
// refused before any request; the scope of the child's kind, which
// the REST mapper tells, is asked only when there is something to write (a
// call that finds the child as mutate wants it asks nothing), and once per
// kind and cluster: a namespaced kind is remembered, a refusal is asked
// again every time. Options are
// small types passed to each call that takes them: [Adopt] and
// [RecordOwner] (CreateOrUpdate, Apply) and [Force] (Apply). To set references in memory,
// use controllerutil's SetControllerReference and SetOwnerReference; they
// neither write nor honour the record below.
//
// # Backup and restore
//
// With [RecordOwner]{}, passed on every call for a child, the child gets,
// with the controller reference, a record of its owner, not the UID,
// which a restore from a backup changes: the labels [OwnerKindLabel]
// ("<Kind>.<group>") and [OwnerNameLabel] ("<name>"), or, when the kind or
// name is not a label value (longer than 63 characters, an RBAC name with
// ':'), the annotation "ownership.steady.dev/owner"
// ("<group>/<Kind>/<namespace>/<name>"). Without it no record is written.
// A restored child comes back without owner references (Velero strips
// them), its owner with a new UID: the next call takes back a child
// without a controller that records the owner (its controller reference
// then holds the new UID), and refuses one that records another owner
// with an [*AlreadyOwnedError] (its Recorded field names that owner)
// unless [Adopt]{} is given. The record is read on every call, with or
// without RecordOwner. A child whose controller reference is to an earlier
// owner of the owner's kind and name (the old UID) and that records the
// owner is taken back too, once a read of the owner shows that the owner
// passed is the current one (the garbage collector usually deletes such a
// child first: see docs/ownership.md). A child without a controller and
// without a record is taken, as controllerutil does. A child is refused
// when either form names another owner. The record is part of the desired
// child, so a converged child is not written for it; a child written
// without the record gets it with one write on its first call with
// RecordOwner.
//
// [Apply] is the server-side-apply variant, idempotent by construction,
// whose result says what the API server did (a child it does not control
// yet is applied locked on the resourceVersion read, so a stale cache read
// is read again, not taken for the state the apply changed);
// [RemoveOwnerReference] removes a reference with its record; [ListChildren] lists an owner's children of one kind through
// the indexer package's controller-owner index when the reader has it, and
// lists and filters otherwise (a direct client whose API server rejected
// the index once is not asked for it again).
package ownership

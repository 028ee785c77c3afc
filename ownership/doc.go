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
// Two ways to write a child. [CreateOrUpdate] reads it, runs mutate and,
// when the result differs from the live object, writes the whole object
// with the resourceVersion it read: a child changed since is a conflict to
// requeue on, never an overwrite, and what mutate does not set again is
// removed, another writer's fields too (and those a typed child's Go type
// lacks, whatever mutate does). [Apply] server-side applies an
// apply configuration with a field manager: only the fields it sets are
// sent, owned and compared, so a child that others edit too (an
// autoscaler's replicas, kubectl rollout restart's annotation) is Apply's.
//
// Both make the owner the child's controller, refuse a child another owner
// controls with an [*AlreadyOwnedError] unless [Adopt]{} is given, and
// refuse a reference the API server or the garbage collector would not
// honour before any write. Through a manager's cached client an unchanged
// child costs no request, and so does one that differs only by the server's
// defaults once the client (steady.NewClient), or the client of the
// reconcile.For the call runs in, carries steady's memory.
// [RecordOwner]{} records the owner's kind and name on the child, so that a
// child restored from a backup is taken back by its owner;
// [RemoveOwnerReference] removes a reference with its record, and
// [ListChildren] lists an owner's children.
//
// The guide, docs/ownership.md in the repository, covers when to use
// which, references, backup and restore, a child the cache has not seen,
// and what each call costs and remembers.
package ownership

// Package ownership creates and updates the children of an owner with a
// controller reference, writing only when the child differs from what the
// caller wants.
//
//	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name}}
//	op, err := ownership.CreateOrUpdate(ctx, r.Client, app, deploy, func() error {
//		deploy.Spec = desiredSpec(app) // wholesale: server defaults are not ours to compare
//		return nil
//	})
//
// controllerutil.CreateOrUpdate compares the child before and after mutate,
// so a mutate that sets a struct wholesale wipes the fields the API server
// defaulted, the comparison always differs, every reconcile writes, and the
// write triggers the next reconcile (controller-runtime #2733). Here the
// child after mutate is compared with the live object as a subset: every
// field the caller set must match, fields it left unset (the defaults) do not
// count, and lists must match element by element. No request but the read is
// made when the desired state is already there.
//
// The controller reference is set inside the mutate path. A child controlled
// by another owner is an [*AlreadyOwnedError] naming both, never stolen;
// [Adopt] takes it over explicitly. References the API server or the garbage
// collector would reject are an [*InvalidOwnerError] before any write: a
// namespaced owner of a cluster-scoped child, an owner in another namespace,
// an owner without a UID.
//
// [Apply] is the server-side-apply variant, idempotent by construction;
// [SetOwnerReference] and [RemoveOwnerReference] handle non-controller
// references; [ListChildren] lists an owner's children of one kind through
// the indexer package's controller-owner index when it is registered.
package ownership

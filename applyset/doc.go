// Package applyset applies a set of manifests and prunes what is no longer
// in it, by the ApplySet protocol (KEP-3659) that kubectl implements, so that
// the same labels and annotations mean the same to both tools.
//
//	parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "shop-manifests"}}
//	set, err := applyset.New(c, parent, applyset.FieldManager("shop-operator"))
//	objs, err := applyset.ParseYAML(manifests)
//	res, err := set.Apply(ctx, objs) // apply all, then prune the members not in objs
//
// # The parent
//
// The parent (a Secret, a ConfigMap, or a custom resource whose CRD carries
// the applyset.kubernetes.io/is-parent-type label) gets the label
// applyset.kubernetes.io/id and the annotations applyset.kubernetes.io/tooling
// (steady/<version>), applyset.kubernetes.io/contains-group-kinds and
// applyset.kubernetes.io/additional-namespaces; members get
// applyset.kubernetes.io/part-of. A Secret or ConfigMap parent is created
// when absent. A parent whose tooling names another tool, and an existing
// Secret or ConfigMap that is not a parent yet, are refused with a
// [*ToolingError] unless [Adopt] is given, as kubectl refuses them; an
// existing custom resource of a parent type is made a parent without
// [Adopt] (its type exists for that purpose).
//
// # Apply, step by step (one file each)
//
//   - parent.go: read the parent, check its type and tooling.
//   - prepare.go: check the input (apiVersion, kind, name, metadata that
//     holds only strings, known kinds, namespaces), label the members.
//   - validate.go: list the members live, one LIST per group-kind and
//     namespace; a member whose every field we set has that value live, and
//     whose fields our field manager owns exactly (no more: a field dropped
//     from the manifest is a removal), is known unchanged without a request;
//     every other member is validated by a server-side dry run.
//   - apply.go: grow the parent's group-kinds and namespaces, apply the CRDs
//     (waiting until they are established), then the Namespaces, then the
//     rest, by server-side apply, skipping the unchanged members.
//   - wait.go: with [WaitCurrent], wait until kstatus finds every member
//     Current, listing per kind.
//   - prune.go: delete the members no longer in the set, then shrink the
//     parent's annotations to what it holds.
//
// # What a bad manifest changes
//
// An input that fails the checks of prepare.go, or a member that the dry
// run refuses before the first write, changes nothing: Apply returns a
// [*ValidationError] with Written empty. Each of its Errors is an
// [*ObjectError] naming the object (its index in the input and "Kind
// namespace/name") and the field at fault: metadata.name missing, kind or
// apiVersion not served (an unknown kind, or one whose CRD is not
// established), an object given twice, a namespace that does not exist or
// is being deleted, a value the API server refuses. A Namespace of the set
// that is being deleted is refused too, before it is written. Two kinds of members can only be
// dry-run once what they need is in place: a member whose kind a CRD of the
// set defines (when that CRD is new or changes) and a member in a Namespace
// of the set that is not live as a member yet (it is new, or about to be
// adopted). Apply validates them after writing the
// parent, the CRDs and the Namespaces, and before writing any other member;
// if one is refused, the [*ValidationError] lists in Written what was
// written. A CRD of the set whose names the API server refuses (they clash
// with another CRD's) is never established: after 30 seconds it is
// an [*ObjectError] of field spec.names, with the CRD and the parent in
// Written and none of the objects of its kind; the next Apply without it
// prunes it (a kind whose only CRD had its names refused and was never
// established is proven not served). A member that the API server refuses at the real apply despite
// its dry run (a conflict with another writer, say) is reported Failed, and
// the other members are still applied; nothing is pruned then.
//
// Only a refusal of the input is a [*ValidationError]: the dry run answers
// 400, 403 (RBAC, an admission webhook's or a policy's denial), 404 (no
// such namespace or kind), 405, 409 (a conflict with another field manager,
// without [Force]), 413, 415 or 422. A dry run that fails otherwise (a 500,
// a 503, a 429, a timeout, a broken connection, a webhook that cannot be
// called) is not the input's fault: Apply returns an error that is no
// ValidationError, names the object and wraps the cause, so that
// apierrors.IsServiceUnavailable and the like still answer; retry it.
//
// # Prune
//
// Prune deletes, among the objects labelled part-of the set, of the
// group-kinds and namespaces the parent's annotations list, those no longer
// wanted: namespaced objects before Namespaces, Namespaces before CRDs, each
// with a precondition on the UID that was listed. It never deletes an object
// whose part-of label does not match; it keeps (and detaches from the set)
// objects annotated cli-utils.sigs.k8s.io/on-remove: keep or
// client.lifecycle.config.k8s.io/deletion: detach. It skips (and keeps as
// a member, Skipped in the Result) a Namespace that still holds wanted
// members or the parent, and a CRD that still defines their kind: deleting
// it would delete them too. The parent's
// group-kinds and namespaces grow before the apply and shrink only after a
// complete prune, so no member is ever forgotten: a group-kind is dropped
// only when it is proven not served (the API server answers 404 to its
// LIST, or the REST mapper finds no match and neither a CRD nor an
// aggregated API defines it); a discovery error, a failed LIST or a failed
// delete keeps it and fails the Apply.
//
// # Requests
//
// On 20 ConfigMaps and 5 Secrets with a Secret parent, besides discovery
// (BenchmarkRequestTable, beside kubectl v1.36 --server-side):
// a first apply costs 54 requests (kubectl 28), an unchanged re-apply 3
// (kubectl 30; 3 as well for 100 objects, kubectl 105), removing 5 objects
// 8 (kubectl 30).
//
// # Weight
//
// applyset imports controller-runtime's client and cli-utils' kstatus/status
// (one package). Built with -ldflags='-s -w', a binary of controller-runtime
// alone weighs 28.9 MB and 28.9 MB with applyset (3 more packages; the
// version that imported cli-utils/pkg/object weighed 55.2 MB). The identity
// of an object is [ObjectID]; write object.ObjMetadata(id) for cli-utils'
// type, and the package applyset/cliutils converts a [Result]'s to an
// object.ObjMetadataSet.
//
// # Clients and concurrency
//
// See [New] for the client a Set needs (a direct client, or a manager's
// client with default options). Apply calls on one Set run one at a time.
package applyset

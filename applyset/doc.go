// Package applyset applies a set of manifests and prunes what is no longer
// in it, by the ApplySet protocol (KEP-3659) that kubectl implements, so that
// the same labels and annotations mean the same to both tools.
//
//	parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "shop-manifests"}}
//	set, err := applyset.New(c, parent, applyset.FieldManager("shop-operator"))
//	objs, err := applyset.ParseYAML(manifests)
//	res, err := set.Apply(ctx, objs) // apply all, then prune the members not in objs
//
// The parent (a Secret, a ConfigMap, or a custom resource whose CRD carries
// the applyset.kubernetes.io/is-parent-type label) gets the label
// applyset.kubernetes.io/id and the annotations applyset.kubernetes.io/tooling
// (steady/<version>), applyset.kubernetes.io/contains-group-kinds and
// applyset.kubernetes.io/additional-namespaces; members get
// applyset.kubernetes.io/part-of.
//
// Apply validates every object by a server-side dry run before the first real
// write, so a bad manifest changes nothing, and an object the dry run shows
// unchanged is not written at all. It applies CRDs first (waiting until each
// is established), then Namespaces, then the rest, by server-side apply. The
// parent's group-kinds and namespaces grow before the apply and shrink only
// after a successful prune, so no member is ever forgotten.
//
// Prune lists, per group-kind and namespace of the parent's annotations, the
// objects labelled part-of the set, and deletes those no longer wanted:
// namespaced objects before Namespaces, Namespaces before CRDs. It never
// deletes an object whose part-of label does not match; it keeps (and detaches
// from the set) objects annotated cli-utils.sigs.k8s.io/on-remove: keep or
// client.lifecycle.config.k8s.io/deletion: detach; it skips and reports a
// group-kind whose CRD is gone. A parent whose tooling names another tool is
// refused unless [Adopt] is given.
package applyset

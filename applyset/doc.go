// Package applyset applies a set of manifests and prunes what is no longer
// in it, by the ApplySet protocol (KEP-3659) that kubectl implements, so that
// the same labels and annotations mean the same to both tools.
//
//	parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "shop-manifests"}}
//	set, err := applyset.New(c, parent, applyset.FieldManager("shop-operator"))
//	objs, err := applyset.ParseYAML(manifests)
//	res, err := set.Apply(ctx, objs) // apply all, then prune the members not in objs
//
// [New] makes the [Set] of a parent (a Secret, a ConfigMap, or a custom
// resource of a parent type); [ParseYAML] and [ReadFS] read manifests;
// [Set.Apply] applies them by server-side apply and prunes, and its
// [Result] says what happened to each object. A parent that another tool
// manages, or a Secret or ConfigMap that is not a parent yet, is refused
// with a [*ToolingError] unless [Adopt] is given.
//
// Apply validates every member it can by a server-side dry run before it
// writes anything, so a bad manifest changes nothing (a [*ValidationError]);
// prune deletes only objects labelled part of the set, of the group-kinds
// and namespaces the parent records, and only after every write succeeded.
// The client a Set needs is [New]'s to say.
//
// The guide, docs/applyset.md in the repository, covers the parent, each
// step of Apply, what a bad manifest changes, the rules of prune, and the
// requests and binary size it costs beside kubectl.
package applyset

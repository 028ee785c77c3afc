package ownership

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/indexer"
	"github.com/steadyk8s/steady/internal/object"
	"github.com/steadyk8s/steady/internal/observe"
)

// ListChildren lists into list the objects of list's kind that owner
// controls, in owner's namespace (everywhere for a cluster-scoped owner).
// It uses the indexer.ControllerOwner index when the reader has it, and
// lists and filters otherwise; either way it keeps only children of this
// owner's UID. Through a direct client every call costs two LISTs: the
// indexed one, which the API server rejects, then the plain one.
//
// Through a manager's client it lists the cache, which may not yet show a
// child this process just created, or may still show one it deleted:
// steady.NewClient remembers those writes for reconcile.For and
// CreateOrUpdate, not for lists. A reconcile that decides from the children
// (counts them, allows one at a time) reads them through a client of
// cachewait.NewClient, whose Lists wait for this process's writes.
func ListChildren(ctx context.Context, c client.Client, owner client.Object, list client.ObjectList, opts ...client.ListOption) error {
	gvk, err := object.GVK(owner, c.Scheme())
	if err != nil {
		return fmt.Errorf("ownership: %w", err)
	}
	if owner.GetNamespace() != "" {
		opts = append(opts, client.InNamespace(owner.GetNamespace()))
	}
	err = indexer.ControllerOwner[client.Object]().List(ctx, c, list, indexer.OwnerKey(gvk.GroupKind(), owner.GetName()), opts...)
	if nre := (*indexer.NotRegisteredError)(nil); errors.As(err, &nre) {
		err = observe.Reader(c, "ownership").List(ctx, list, opts...)
	}
	if err != nil {
		return fmt.Errorf("ownership: listing the children of %s: %w", object.Describe(owner, c.Scheme()), err)
	}
	return meta.SetList(list, filterControlled(list, owner))
}

func filterControlled(list client.ObjectList, owner client.Object) []runtime.Object {
	items, _ := meta.ExtractList(list)
	var out []runtime.Object
	for _, it := range items {
		if o, ok := it.(client.Object); ok {
			if ref := metav1.GetControllerOfNoCopy(o); ref != nil && ref.UID == owner.GetUID() {
				out = append(out, it)
			}
		}
	}
	return out
}

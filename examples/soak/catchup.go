package soak

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/steadyk8s/steady/applyset"
)

// cacheLag compares what the leader's cache shows with the live state: the
// soak's owners and the objects they control (their UIDs and
// resourceVersions). It returns "" when the cache shows exactly what is
// live, else what differs (the first few). The quiet window begins only
// once the leader has caught up: until then a reconcile may start from a
// cache that does not show a child yet (after the API server restart, its
// informers list and watch again), and its create of that child, refused
// AlreadyExists, is a request of the catching up, not of a system at rest.
func (s *state) cacheLag(ctx context.Context, kinds []kind, leader client.Reader) string {
	ours := map[string]bool{}
	var lists []client.ObjectList
	for _, k := range kinds {
		gvk, err := apiutil.GVKForObject(k.newObject(), s.c.Scheme())
		if err != nil {
			return err.Error()
		}
		ours[gvk.Kind] = true
		l, err := s.c.Scheme().New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err != nil {
			return err.Error()
		}
		lists = append(lists, l.(client.ObjectList))
	}
	// Typed lists only: an unstructured one would start informers of its
	// own in the leader's cache.
	// A Bundle's members are ConfigMaps that are part of its ApplySet by
	// label, without an ownerReference.
	lists = append(lists, &rbacv1.RoleBindingList{}, &rbacv1.ClusterRoleBindingList{}, &networkingv1.NetworkPolicyList{}, &corev1.ConfigMapList{})
	for _, l := range childKinds {
		lists = append(lists, l.DeepCopyObject().(client.ObjectList))
	}
	var diffs []string
	for _, list := range lists {
		live, err := s.versions(ctx, s.c, list, ours)
		if err != nil {
			return fmt.Sprintf("listing %T live: %v", list, err)
		}
		cached, err := s.versions(ctx, leader, list.DeepCopyObject().(client.ObjectList), ours)
		if err != nil {
			return fmt.Sprintf("listing %T in the leader's cache: %v", list, err)
		}
		for id, rv := range live {
			if cached[id] != rv {
				diffs = append(diffs, fmt.Sprintf("%s at %s live, %q cached", id, rv, cached[id]))
			}
		}
		for id, rv := range cached {
			if _, ok := live[id]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s at %s cached, gone live", id, rv))
			}
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 5 {
		diffs = append(diffs[:5], fmt.Sprintf("and %d more", len(diffs)-5))
	}
	return strings.Join(diffs, "; ")
}

// versions lists list through r and returns the resourceVersion of each of
// the soak's owners, of each object one of them controls and of each
// ApplySet member (a Bundle's), by kind, namespace, name and UID.
func (s *state) versions(ctx context.Context, r client.Reader, list client.ObjectList, owners map[string]bool) (map[string]string, error) {
	if err := r.List(ctx, list); err != nil {
		return nil, err
	}
	items, err := metaItems(list)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, item := range items {
		gvk, _ := apiutil.GVKForObject(item, s.c.Scheme())
		ref := metav1.GetControllerOf(item)
		_, member := item.GetLabels()[applyset.PartOfLabel]
		if !owners[gvk.Kind] && (ref == nil || !owners[ref.Kind]) && !member {
			continue
		}
		out[fmt.Sprintf("%s %s (%s)", gvk.Kind, types.NamespacedName{Namespace: item.GetNamespace(), Name: item.GetName()}, item.GetUID())] = item.GetResourceVersion()
	}
	return out, nil
}

// waitCaughtUp waits, for at most d, until the leader's cache shows the
// live state (see [state.cacheLag]), and returns what still differs then
// ("" once caught up).
func (s *state) waitCaughtUp(ctx context.Context, kinds []kind, rs *replicas, d time.Duration) string {
	deadline := time.Now().Add(d)
	for {
		lag := "no leader"
		if l := rs.leader(); l != nil {
			lag = "the leader has not said where its cache is yet"
			if c := l.cache.Load(); c != nil {
				lag = s.cacheLag(ctx, kinds, *c)
			}
		}
		if lag == "" || time.Now().After(deadline) {
			return lag
		}
		time.Sleep(200 * time.Millisecond)
	}
}

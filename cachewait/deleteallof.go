package cachewait

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// checkAll is check for a DeleteAllOf: every object the cache holds that
// matches it, and that a read of rs selects, must be marked for deletion,
// or known (through the API reader) to have been left alone, being
// created later or not matching a field selector. e.mu is held.
//
// Once the cache has lagged After, one live LIST of the DeleteAllOf's
// namespace and labels tells, for every object the cache still holds
// unmarked, whether it is alive and unmarked (left alone: no longer waited
// for) or gone or marked (the cache lags: waited for without asking
// again). The live LIST is made again, at most once per After, only for
// objects that appeared in the cache since.
func (e *expectation) checkAll(ctx context.Context, r client.Reader, o WaitOptions, v *view, rs readScope) (state, string, error) {
	namespace := cmp.Or(e.namespace, rs.namespace)
	newList := e.newList
	if v != nil {
		newList = v.newList
	}
	list := newList()
	if err := r.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: e.selector}); err != nil {
		return waiting, "", cacheError{fmt.Errorf("cachewait: listing %s from the cache: %w", e.name, err)}
	}
	left, err := e.unmarked(list, rs)
	if err != nil {
		return waiting, "", fmt.Errorf("cachewait: listing %s from the cache: %w", e.name, err)
	}
	var unknown []client.Object
	for _, obj := range left {
		if !e.goneUIDs[obj.GetUID()] {
			unknown = append(unknown, obj)
		}
	}
	if len(unknown) > 0 && e.askLive(o) {
		live := newList()
		if err := o.APIReader.List(ctx, live, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: e.selector}); err != nil {
			return waiting, "", fmt.Errorf("cachewait: listing %s from the API server: %w", e.name, err)
		}
		items, err := meta.ExtractList(live)
		if err != nil {
			return waiting, "", fmt.Errorf("cachewait: listing %s from the API server: %w", e.name, err)
		}
		alive := map[types.UID]bool{}
		for _, item := range items {
			if obj, ok := item.(client.Object); ok && obj.GetDeletionTimestamp() == nil {
				alive[obj.GetUID()] = true
			}
		}
		for _, obj := range unknown {
			if alive[obj.GetUID()] {
				e.exempt[obj.GetUID()] = true // not deleted: not what DeleteAllOf removed
			} else {
				e.goneUIDs[obj.GetUID()] = true // gone or marked: the cache lags
			}
		}
		left, _ = e.unmarked(list, rs)
	}
	if len(left) > 0 {
		return waiting, left[0].GetName() + "@" + left[0].GetResourceVersion(), nil
	}
	if rs.narrow() || (e.namespace == "" && rs.namespace != "") {
		// Caught up for what this read selects only.
		return readable, "", nil
	}
	return caughtUp, "", nil
}

// unmarked returns the objects of list, the cache's objects matching the
// DeleteAllOf, that a read of rs selects and that are neither marked for
// deletion nor exempt.
func (e *expectation) unmarked(list client.ObjectList, rs readScope) ([]client.Object, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	var left []client.Object
	for _, item := range items {
		obj, ok := item.(client.Object)
		if !ok || obj.GetDeletionTimestamp() != nil || e.exempt[obj.GetUID()] ||
			rs.name != "" && obj.GetName() != rs.name ||
			rs.labels != nil && !rs.labels.Matches(labels.Set(obj.GetLabels())) {
			continue
		}
		left = append(left, obj)
	}
	return left, nil
}

// newDeleteAll expects a DeleteAllOf of obj's kind in namespace ("": all)
// of the objects sel matches; newList makes lists of them in obj's
// representation.
func newDeleteAll(obj client.Object, kind, namespace string, sel labels.Selector, newList func() client.ObjectList, at time.Time) *expectation {
	return &expectation{obj: obj, kind: kind, mode: modeDeleteAll, at: at,
		name: strings.TrimSpace(kind + " " + namespace), namespace: namespace, selector: sel,
		newList: newList, exempt: map[types.UID]bool{}, goneUIDs: map[types.UID]bool{}}
}

package patch

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

// part is one write: the status subresource, or the object.
type part struct {
	status   bool // written to the status subresource (until it is found missing)
	fallback bool // status written to the object: there is no status subresource
	// rest is the part of the object's other fields, which a status written
	// with the object takes along (merged marks it so): one write, one
	// generation bump.
	rest   *part
	merged bool
	diff   map[string]any
	lists  []*list
	// drops are the maps this change removes whole (a null in diff where
	// the snapshot had a map with keys): see dropMaps.
	drops []mapDrop
	// gen is the generation the change was computed from (the snapshot's).
	gen int64
}

func (p *part) step() string {
	if p.fallback && p.rest != nil && p.rest.merged {
		return stepStatus + ", " + stepMain
	}
	if p.status || p.fallback {
		return stepStatus
	}
	return stepMain
}

// The paths of the lists plan always rebases (shared: never changed).
var (
	finalizersPath      = []string{"metadata", "finalizers"}
	ownerReferencesPath = []string{"metadata", "ownerReferences"}
	conditionsPath      = []string{"status", "conditions"}
)

// metadata fields the API server owns, or that are rebased as lists.
var skippedMetadata = []string{
	"resourceVersion", "managedFields", "generation", "creationTimestamp", "uid",
	"deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "finalizers", "ownerReferences",
}

// plan splits the change from snap (the snapshot) to am (the object as
// changed, a map this call may change) into the writes to make. plan only
// reads snap (the caller keeps it as the latest state): it takes apart a
// copy of the maps it deletes from, sharing the rest.
func plan(snap, am map[string]any, obj client.Object, o Options) ([]*part, error) {
	var err error
	if o.ObservedGeneration {
		if err := unstructured.SetNestedField(am, obj.GetGeneration(), "status", "observedGeneration"); err != nil {
			return nil, fmt.Errorf("setting status.observedGeneration: %w", err)
		}
	}
	owned := ownedSet(o.OwnedConditions)
	// The lists, in one allocation (plan runs on every write).
	backing := make([]list, 0, 3+len(o.ConditionLists))
	all := make([]*list, 0, cap(backing))
	add := func(l list) {
		for i := range backing {
			if slices.Equal(backing[i].path, l.path) {
				return // named again: the first list at a path is the one rebased
			}
		}
		backing = append(backing, l)
		all = append(all, &backing[len(backing)-1])
	}
	add(list{path: finalizersPath, key: stringKey})
	add(list{path: ownerReferencesPath, key: uidKey})
	for i := -1; i < len(o.ConditionLists); i++ {
		p := conditionsPath
		if i >= 0 {
			p = o.ConditionLists[i]
		}
		if len(p) == 0 {
			continue
		}
		add(list{path: p, key: typeKey, owned: owned, conditions: true})
	}
	lists := all[:0]
	for _, l := range all {
		b, _, _ := unstructured.NestedFieldNoCopy(snap, l.path...)
		a, _, _ := unstructured.NestedFieldNoCopy(am, l.path...)
		var bok, aok bool
		l.before, bok = b.([]any)
		l.after, aok = a.([]any)
		if (b != nil && !bok) || (a != nil && !aok) {
			continue // not a list there: an ordinary field of the diff
		}
		lists = append(lists, l)
	}
	all = lists
	bm := takeApart(snap, all)
	for _, l := range all {
		unstructured.RemoveNestedField(bm, l.path...)
		unstructured.RemoveNestedField(am, l.path...)
	}

	gen, _, _ := unstructured.NestedInt64(bm, "metadata", "generation")
	// status
	sb, _ := bm["status"].(map[string]any)
	sa, _ := am["status"].(map[string]any)
	// The two parts and the list of those to write, in one allocation.
	both := new(struct {
		parts [2]part
		ptrs  [2]*part
	})
	status := &both.parts[0]
	*status = part{status: true, gen: gen}
	if len(sb) == 0 && len(sa) == 0 {
		// No status on either side (a finalizer's write, say): no
		// difference, without building two maps to find it.
		status.diff = map[string]any{}
	} else if status.diff, err = mergeDiff(map[string]any{"status": orEmpty(sb)}, map[string]any{"status": orEmpty(sa)}); err != nil {
		return nil, err
	}
	status.collectDrops(status.diff, snap, nil)
	// the rest
	strip := func(m map[string]any) map[string]any {
		delete(m, "status")
		delete(m, "apiVersion")
		delete(m, "kind")
		if md, ok := m["metadata"].(map[string]any); ok {
			for _, f := range skippedMetadata {
				delete(md, f)
			}
		}
		return m
	}
	main := &both.parts[1]
	*main = part{gen: gen}
	if main.diff, err = mergeDiff(strip(bm), strip(am)); err != nil {
		return nil, err
	}
	main.collectDrops(main.diff, snap, nil)
	for _, l := range all {
		if !l.changed() && !l.hasOwned() {
			continue
		}
		if l.path[0] == "status" {
			status.lists = append(status.lists, l)
		} else {
			main.lists = append(main.lists, l)
		}
	}
	parts := both.ptrs[:0]
	if len(main.diff) > 0 || len(main.lists) > 0 {
		status.rest = main
	}
	for _, p := range []*part{status, main} {
		// A value JSON cannot encode (a NaN) is refused before any write,
		// not after the status was written.
		if err := object.CheckJSON(p.diff); err != nil {
			return nil, err
		}
		if len(p.diff) > 0 || len(p.lists) > 0 {
			parts = append(parts, p)
		}
	}
	return parts, nil
}

// mergeDiff is the JSON merge patch from before to after, without the
// empty objects that add nothing (see prune). It works on the maps, without
// encoding them (see [object.MergeDiff]).
func mergeDiff(before, after map[string]any) (map[string]any, error) {
	diff := object.MergeDiff(before, after)
	prune(diff, before)
	return diff, nil
}

// prune drops from a merge patch the empty objects that change nothing: an
// empty object merged where there was an object, no value or null adds no
// field (it only appears because an omitempty field's parent struct is
// never omitted, as in {"spec":{"topology":{}}}). Nulls, which remove, stay.
func prune(patch, before map[string]any) {
	for k, v := range patch {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		b, _ := before[k].(map[string]any)
		prune(m, b)
		if len(m) == 0 {
			if _, isMap := before[k].(map[string]any); isMap || before[k] == nil {
				delete(patch, k)
			}
		}
	}
}

// takeApart returns the copy of snap that plan deletes from: its top
// level, its metadata (which strip takes apart) and, for each of lists that
// snap holds, the maps above the list are copies, once each; every other
// value is shared with snap, which stays whole.
func takeApart(snap map[string]any, lists []*list) map[string]any {
	bm := object.CopyMap(snap, 0)
	if md, ok := snap["metadata"].(map[string]any); ok {
		bm["metadata"] = object.CopyMap(md, 0)
	}
	for i, l := range lists {
		if !present(snap, l.path) {
			continue // RemoveNestedField deletes nothing
		}
		m := bm
		for j, k := range l.path[:len(l.path)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				break
			}
			copied := j == 0 && k == "metadata" || slices.ContainsFunc(lists[:i], func(e *list) bool {
				return len(e.path) > j+1 && slices.Equal(e.path[:j+1], l.path[:j+1]) && present(snap, e.path)
			})
			if !copied {
				next = object.CopyMap(next, 0)
				m[k] = next
			}
			m = next
		}
	}
	return bm
}

// present reports whether m holds a value (null included) at path.
func present(m map[string]any, path []string) bool {
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			return false
		}
		m = next
	}
	_, ok := m[path[len(path)-1]]
	return ok
}

// ownedSet is the set of owned condition types (nil for none: no entry
// is owned).
func ownedSet(types []string) map[string]bool {
	if len(types) == 0 {
		return nil
	}
	owned := make(map[string]bool, len(types))
	for _, t := range types {
		owned[t] = true
	}
	return owned
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

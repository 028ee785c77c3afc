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
	// the snapshot had a map with keys): see mapDrop.
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

// plan splits the change from snap (the snapshot as a map, which plan only
// reads: the caller keeps it as the latest state) to obj (the object as
// changed) into the writes to make.
func plan(snap map[string]any, obj client.Object, o Options) ([]*part, error) {
	am, err := object.ToMapWithoutManagedFields(obj)
	if err != nil {
		return nil, err
	}
	if o.ObservedGeneration {
		if err := unstructured.SetNestedField(am, obj.GetGeneration(), "status", "observedGeneration"); err != nil {
			return nil, fmt.Errorf("setting status.observedGeneration: %w", err)
		}
	}
	// The lists, in one allocation (plan runs on every write).
	backing := make([]list, 0, 3+len(o.ConditionLists))
	lists := make([]*list, 0, cap(backing))
	add := func(l list) {
		for i := range backing {
			if slices.Equal(backing[i].path, l.path) {
				return // named again: the first list at a path is the one rebased
			}
		}
		b, _, _ := unstructured.NestedFieldNoCopy(snap, l.path...)
		a, _, _ := unstructured.NestedFieldNoCopy(am, l.path...)
		var bok, aok bool
		l.before, bok = b.([]any)
		l.after, aok = a.([]any)
		backing = append(backing, l)
		if (b != nil && !bok) || (a != nil && !aok) {
			return // not a list there: an ordinary field of the diff (but finalizers and ownerReferences, which are never written: skippedMetadata; the API server would refuse them)
		}
		lists = append(lists, &backing[len(backing)-1])
		// Rebased apart: the diff sees the snapshot's list alone, as a
		// removal, which without takes out.
		unstructured.RemoveNestedField(am, l.path...)
	}
	add(list{path: finalizersPath, key: stringKey})
	add(list{path: ownerReferencesPath, key: uidKey})
	for i := -1; i < len(o.ConditionLists); i++ {
		p := conditionsPath
		if i >= 0 {
			p = o.ConditionLists[i]
		}
		if len(p) > 0 {
			add(list{path: p, key: typeKey, owned: o.OwnedConditions, conditions: true})
		}
	}
	// without takes the lists out of the merge patch d from before, and the
	// empty objects that add nothing (see prune); no difference is an empty
	// map, to which a write may add.
	without := func(d, before map[string]any) map[string]any {
		for _, l := range lists {
			unstructured.RemoveNestedField(d, l.path...)
		}
		prune(d, before)
		if d == nil {
			return map[string]any{}
		}
		return d
	}

	gen, _, _ := unstructured.NestedInt64(snap, "metadata", "generation")
	// The two parts and the list of those to write, in one allocation.
	both := new(struct {
		parts [2]part
		ptrs  [2]*part
	})
	status, main := &both.parts[0], &both.parts[1]
	*status, *main = part{status: true, gen: gen}, part{gen: gen}
	// status, to the status subresource
	sb, _ := snap["status"].(map[string]any)
	sa, _ := am["status"].(map[string]any)
	if len(sb) == 0 && len(sa) == 0 {
		// No status on either side (a finalizer's write, say): no
		// difference, without building two maps to find it.
		status.diff = map[string]any{}
	} else {
		before := map[string]any{"status": orEmpty(sb)}
		status.diff = without(object.MergeDiff(before, map[string]any{"status": orEmpty(sa)}), before)
	}
	status.collectDrops(status.diff, snap, nil)
	// the rest, without what the API server owns
	delete(am, "status") // a removal, dropped below, not a walk of status again
	main.diff = object.MergeDiff(snap, am)
	delete(main.diff, "status")
	delete(main.diff, "apiVersion")
	delete(main.diff, "kind")
	if md, ok := main.diff["metadata"].(map[string]any); ok {
		for _, f := range skippedMetadata {
			delete(md, f)
		}
	}
	main.diff = without(main.diff, snap)
	main.collectDrops(main.diff, snap, nil)
	for _, l := range lists {
		p := main
		if l.path[0] == "status" {
			p = status
		}
		// A list the change removes with a map above it (read empty, so
		// unchanged) is rebased too: another writer's entries stay.
		if equalList(l.before, l.after) && !l.hasOwned() && (l.before == nil || !removes(p.diff, l.path)) {
			continue
		}
		p.lists = append(p.lists, l)
	}
	parts := both.ptrs[:0]
	if len(main.diff) > 0 || len(main.lists) > 0 {
		status.rest = main
	}
	for _, p := range []*part{status, main} {
		// A value JSON cannot encode (a NaN) is refused before any write,
		// not after the status was written.
		if p.diff, err = object.AsJSON(p.diff); err != nil {
			return nil, err
		}
		if len(p.diff) > 0 || len(p.lists) > 0 {
			parts = append(parts, p)
		}
	}
	return parts, nil
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

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

package ownership

import (
	"encoding/json"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

// asApplied reports whether applying u as fieldManager would change
// nothing on live, from live alone: live holds every value u sends, and
// the fields fieldManager applied (live's managedFields) are exactly the
// fields u sets, so the apply would neither release a field nor take a new
// one. It decides without memory, so it holds after a restart and while
// live's resourceVersion moves by other writers (its status, their
// fields).
//
// It is the answer of the server's field sets, read without a schema: an
// associative list is matched by the keys its "k:" entries name, a set by
// its "v:" entries; a field owned whole (an atomic map or list, which the
// field set shows with nothing under it) must equal live's exactly. Where
// it cannot tell (a list keyed by position, a null sent, managedFields
// stripped from the cache, a value the server would normalize), it says
// false and the apply is sent, which is never wrong.
func asApplied(live client.Object, u *unstructured.Unstructured, fieldManager string) bool {
	fields, version := appliedFields(live, fieldManager)
	owned, ok := fields.(map[string]any)
	if !ok || version != u.GetAPIVersion() {
		// An entry of another version is rewritten in u's by the apply;
		// kept, it fails every apply once its version leaves the kind.
		return false
	}
	lm, err := object.ToMapWithoutManagedFields(live)
	if err != nil {
		return false
	}
	sent := withoutStatus(u.Object)
	meta, _ := sent["metadata"].(map[string]any)
	if meta != nil {
		// Named, not owned: the field set holds neither.
		m := make(map[string]any, len(meta))
		for k, v := range meta {
			if k != "name" && k != "namespace" {
				m[k] = v
			}
		}
		sent["metadata"] = m
		if len(m) == 0 {
			delete(sent, "metadata")
		}
	}
	return sameFields(sent, owned, withoutStatus(lm), otherFields(live, fieldManager)...)
}

// otherFields are the field sets of live's other managers (every entry but
// fieldManager's applied one), decoded.
func otherFields(live client.Object, fieldManager string) []managerSet {
	return object.FieldSets(live, func(f metav1.ManagedFieldsEntry) bool { return isApplied(f, fieldManager) })
}

// descend is the nodes of others under k.
func descend(others []managerSet, k string) []managerSet {
	var out []managerSet
	for _, o := range others {
		if sub, ok := o.Set[k].(map[string]any); ok {
			out = append(out, managerSet{Manager: o.Manager, Set: sub})
		}
	}
	return out
}

// granular reports whether another manager owns a field under a node:
// an atomic map or list is owned whole, never field by field, so the node
// this manager owns with nothing under it is a granular map or list entry
// whose fields it lost (another manager took them), or sent empty.
func granular(others []managerSet) bool {
	for _, o := range others {
		for k := range o.Set {
			if k != "." {
				return true
			}
		}
	}
	return false
}

// sameFields reports whether sent, a value an apply sends, sets exactly
// the fields of fields (a node of a managedFields field set) and live
// holds every value it sets.
func sameFields(sent any, fields map[string]any, live any, others ...managerSet) bool {
	children := 0
	for k := range fields {
		if k != "." {
			children++
		}
	}
	switch s := sent.(type) {
	case nil:
		return false // a null sent removes: let the server decide
	case map[string]any:
		if children == 0 {
			// Owned whole (an atomic map), or an empty one.
			return !granular(others) && object.EqualJSON(s, live)
		}
		l, _ := live.(map[string]any)
		if len(s) != children {
			return false
		}
		for k, v := range s {
			sub, ok := fields["f:"+k].(map[string]any)
			if !ok || !sameFields(v, sub, l[k], descend(others, "f:"+k)...) {
				return false
			}
		}
		return true
	case []any:
		if children == 0 {
			return !granular(others) && object.EqualJSON(s, live) // an atomic list
		}
		l, _ := live.([]any)
		if len(s) != children {
			return false
		}
		return sameList(s, fields, l, others)
	default:
		return children == 0 && object.EqualJSON(s, live)
	}
}

// sameList is sameFields for a list whose field set names its elements:
// by their keys ("k:{...}", an associative list) or their values ("v:...",
// a set). Every element sent has one entry, and one element in live.
func sameList(sent []any, fields map[string]any, live []any, others []managerSet) bool {
	used := make(map[string]bool, len(sent))
	last := -1 // the position in live of the element sent before: the apply orders them as sent
	for _, e := range sent {
		matched := false
		for k, sub := range fields {
			if used[k] {
				continue
			}
			switch {
			case strings.HasPrefix(k, "k:"):
				var key map[string]any
				em, ok := e.(map[string]any)
				if json.Unmarshal([]byte(k[2:]), &key) != nil || !ok {
					continue
				}
				sm, ok := sub.(map[string]any)
				if !ok || !hasKey(em, key, sm) {
					continue
				}
				le, at := elementWithKey(live, key)
				if le == nil || at < last || !sameFields(em, sm, le, descend(others, k)...) {
					return false
				}
				last = at
			case strings.HasPrefix(k, "v:"):
				var v any
				if json.Unmarshal([]byte(k[2:]), &v) != nil || !object.EqualJSON(e, v) {
					continue
				}
				at := indexOfValue(live, v)
				if at < last {
					return false // absent (-1), or before the element sent before it
				}
				last = at
			default:
				return false // keyed by position: not told apart here
			}
			used[k], matched = true, true
			break
		}
		if !matched {
			return false
		}
	}
	return true
}

// hasKey reports whether element e has every key field of key, equal.
// A key field e does not send and fields (e's field set; nil: none) does
// not own is the schema's default (a port's protocol): the server keys e
// with it as before.
func hasKey(e, key, fields map[string]any) bool {
	for k, v := range key {
		if _, sent := e[k]; !sent && fields != nil {
			if _, owned := fields["f:"+k]; !owned {
				continue
			}
		}
		if !object.EqualJSON(e[k], v) {
			return false
		}
	}
	return true
}

// elementWithKey returns the one element of list with key, or nil (none,
// or more than one).
func elementWithKey(list []any, key map[string]any) (map[string]any, int) {
	var found map[string]any
	at := -1
	for i, e := range list {
		if em, ok := e.(map[string]any); ok && hasKey(em, key, nil) {
			if found != nil {
				return nil, -1
			}
			found, at = em, i
		}
	}
	return found, at
}

func indexOfValue(list []any, v any) int {
	for i, e := range list {
		if object.EqualJSON(e, v) {
			return i
		}
	}
	return -1
}

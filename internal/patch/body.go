package patch

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/steadyk8s/steady/internal/object"
)

// body is the merge patch of p on latest; lock is set when it must be
// locked on latest's resourceVersion (it sends a list, or removes a whole
// map). stale is set, and nothing is to be sent, when p is status computed
// from an older generation than latest's, or one of its conditions is
// older than the live one: writing it would write the past. Where latest
// is the object as its Go type reads it, owned are the field sets of its
// managedFields, which name the fields the type may not show, and typ is
// that Go type (see mapDrop.removal); nil otherwise.
func (p *part) body(latest map[string]any, owned []map[string]any, typ reflect.Type, o Options) (body map[string]any, lock bool, stale string, err error) {
	// A live observedGeneration above the live generation observed no
	// generation of this object (a status restored or copied onto it): it
	// is no newer observation than ours.
	liveGen, _, _ := unstructured.NestedInt64(latest, "metadata", "generation")
	if (p.status || p.fallback) && (o.ObservedGeneration || o.GuardGeneration) {
		if live, ok, _ := unstructured.NestedInt64(latest, "status", "observedGeneration"); ok && live > p.gen && live <= liveGen {
			return nil, false, fmt.Sprintf("status was computed from generation %d; the live status has observed generation %d", p.gen, live), nil
		}
	}
	body = runtime.DeepCopyJSON(p.diff) // plan made it JSON types (object.AsJSON)
	for _, d := range p.drops {
		cur, _, _ := unstructured.NestedFieldNoCopy(latest, d.path...)
		at, t := owned, typ
		for _, k := range d.path {
			at = object.FieldChildren(at, "f:"+k)
			t, _ = fieldType(t, k)
		}
		v, keep, exact := d.removal(cur, at, t)
		if !keep {
			unstructured.RemoveNestedField(body, d.path...)
			continue
		}
		if err := unstructured.SetNestedField(body, v, d.path...); err != nil {
			return nil, false, "", err
		}
		lock = lock || exact
	}
	for _, l := range p.lists {
		c, _, _ := unstructured.NestedFieldNoCopy(latest, l.path...)
		cur, _ := c.([]any)
		out, older := l.rebase(cur, liveGen)
		if older != "" {
			return nil, false, fmt.Sprintf("condition %s of %s was computed from an older generation than the live one", older, strings.Join(l.path, ".")), nil
		}
		if (equalList(out, cur) || sameEntries(out, cur, l.key)) && (len(out) == 0 || !removes(body, l.path)) {
			// An order alone is no change: two writers that keep the
			// list in different orders would rewrite it for ever. But
			// where the body removes the list (the change dropped a map
			// above it), the entries left are another writer's: sent,
			// they stay.
			continue
		}
		var v any
		if len(out) > 0 {
			v = out
		}
		if err := setList(body, latest, v, l.path); err != nil {
			return nil, false, "", err
		}
		lock = true
	}
	// After a conflict the latest object may already hold some of what
	// this reconcile changed (another writer, or our own earlier write
	// seen late, set it): such fields are no change, and a body left
	// empty is no write.
	dropApplied(body, latest)
	if p.fallback {
		if err := p.stampGenerations(body, latest, liveGen, o); err != nil {
			return nil, false, "", err
		}
	}
	return body, lock, "", nil
}

// removes reports whether the merge patch body removes the value at path:
// a null there, or at a map above it.
func removes(body map[string]any, path []string) bool {
	m := body
	for _, k := range path {
		v, ok := m[k]
		if !ok {
			return false
		}
		if v == nil {
			return true
		}
		if m, ok = v.(map[string]any); !ok {
			return false
		}
	}
	return false
}

// setList sets the list at path in a merge patch body whose diff may
// remove a parent of it (a null: the change dropped the whole parent, say
// status.deprecated). Then no list is left to send, or, where another
// writer added entries meanwhile, the parent is sent as an object that
// removes every other field latest has under it, keeping the removal.
func setList(body, latest map[string]any, v any, path []string) error {
	m, cur := body, latest
	removing := false // a parent is removed: null the fields latest has below it
	for _, p := range path[:len(path)-1] {
		val, present := m[p]
		c, _ := cur[p].(map[string]any)
		next, ok := val.(map[string]any)
		switch {
		case ok:
		case val != nil:
			return fmt.Errorf("field %s is not an object", strings.Join(path, "."))
		case present && v == nil:
			return nil // the parent's removal removes the list
		default:
			removing = removing || present
			next = map[string]any{}
			if removing {
				for k := range c {
					next[k] = nil
				}
			}
			m[p] = next
		}
		m, cur = next, c
	}
	m[path[len(path)-1]] = v
	return nil
}

// stampGenerations: written with the object, status bumps the generation.
// Record the generation this write produces in what observed the
// snapshot's generation: status.observedGeneration (with
// ObservedGeneration, which is then not written alone once it is current)
// and our conditions in the body; else a condition stamped with the
// generation it observed is one behind after every write, and the next
// reconcile stamps it again, and writes, for ever. gen is latest's
// generation.
func (p *part) stampGenerations(body, latest map[string]any, gen int64, o Options) error {
	// The generation this write produces, unless the spec moved on since
	// the snapshot: then status observed the snapshot's.
	next := gen + 1
	if gen > p.gen {
		next = p.gen
	}
	bumps := func() bool { // a change outside metadata bumps the generation
		for k := range body {
			if k != "metadata" {
				return true
			}
		}
		return false
	}
	if o.ObservedGeneration {
		if s, ok := body["status"].(map[string]any); ok {
			delete(s, "observedGeneration")
			if len(s) == 0 {
				delete(body, "status")
			}
		}
		og, _, _ := unstructured.NestedInt64(latest, "status", "observedGeneration")
		if bumps() || og != next && og != gen {
			if err := unstructured.SetNestedField(body, next, "status", "observedGeneration"); err != nil {
				return err
			}
		}
	}
	if next == p.gen || !bumps() {
		return nil
	}
	for _, l := range p.lists {
		v, _, _ := unstructured.NestedFieldNoCopy(body, l.path...)
		if sent, ok := v.([]any); ok && l.conditions {
			l.stampGeneration(sent, p.gen, next)
		}
	}
	return nil
}

// mapDrop is a map this change removes whole: the map at path, as read.
type mapDrop struct {
	path []string
	read map[string]any
	// keyByKey: always remove the keys read one by one (labels and
	// annotations, where an empty map is no map).
	keyByKey bool
}

// removal is what removes d's map from cur, the value latest has at its
// path: a null (exact, to be sent locked) where cur holds no key we did
// not read, at any depth; else the keys we read, each removed the same way,
// so that a key another writer added is kept. keep is false where nothing
// is to be sent: cur is no map (another writer replaced it, or it is gone).
// Where cur is read through a Go type, owned are the nodes at cur's place
// of the object's field sets: a field they name that cur lacks (one the Go
// type does not hold, which the reconcile never read) is another writer's,
// kept as a key not read; typ is the Go type at cur's place (nil: one that
// holds any field), which tells a field it lacks from one it holds but
// omits (a zero value under omitempty), which is no other writer's.
func (d mapDrop) removal(cur any, owned []map[string]any, typ reflect.Type) (v any, keep, exact bool) {
	cm, ok := cur.(map[string]any)
	if !ok {
		return nil, false, false
	}
	if !d.keyByKey && onlyRead(d.read, cm) && !hiddenBelow(owned, cm, typ) {
		return nil, true, true
	}
	out := map[string]any{}
	for k, rv := range d.read {
		c, present := cm[k]
		if !present {
			continue
		}
		if rm, isMap := rv.(map[string]any); isMap {
			ft, _ := fieldType(typ, k)
			if v, keep, ex := (mapDrop{read: rm}).removal(c, object.FieldChildren(owned, "f:"+k), ft); keep {
				out[k] = v
				exact = exact || ex
			}
			continue
		}
		out[k] = nil
	}
	return out, true, exact
}

// hiddenBelow reports whether a node of owned (field sets at cur's place)
// names a field that cur, the object as its Go type reads it, lacks and
// that the Go type, typ at cur's place, does not hold, at any depth of
// maps. A field the type holds that cur lacks is a zero value it omits.
func hiddenBelow(owned []map[string]any, cur map[string]any, typ reflect.Type) bool {
	for _, n := range owned {
		for k := range n {
			name, ok := strings.CutPrefix(k, "f:")
			if !ok {
				continue
			}
			ft, holds := fieldType(typ, name)
			c, present := cur[name]
			if !present {
				if !holds {
					return true
				}
				continue
			}
			if cm, isMap := c.(map[string]any); isMap && hiddenBelow(object.FieldChildren([]map[string]any{n}, k), cm, ft) {
				return true
			}
		}
	}
	return false
}

// fieldType is the Go type of the JSON field name of t, and whether t
// holds such a field: a struct's field as the Kubernetes JSON decoder
// finds it (through pointers, and embedded structs: [object.JSONField]), a
// map's element. A type that decodes itself (a json.Unmarshaler) or an
// interface holds any field: nil, true; so does a nil t.
func fieldType(t reflect.Type, name string) (reflect.Type, bool) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshaler) {
		return nil, true
	}
	switch t.Kind() {
	case reflect.Map:
		return t.Elem(), true
	case reflect.Struct:
		if path, ok := object.JSONField(t, name); ok {
			return t.FieldByIndex(path).Type, true
		}
	}
	return nil, false
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// onlyRead reports whether cur holds only keys that read has, at every
// depth of maps.
func onlyRead(read, cur map[string]any) bool {
	for k, c := range cur {
		r, ok := read[k]
		if !ok {
			return false
		}
		if cm, isMap := c.(map[string]any); isMap {
			rm, _ := r.(map[string]any)
			if !onlyRead(rm, cm) {
				return false
			}
		}
	}
	return true
}

// collectDrops records in p the maps that diff removes whole: a null in
// diff where before, the snapshot at the same place, has a map.
// path is where diff is; its backing array is reused for the keys below,
// and copied only for a drop found.
func (p *part) collectDrops(diff, before map[string]any, path []string) {
	for k, v := range diff {
		switch v := v.(type) {
		case nil:
			if m, ok := before[k].(map[string]any); ok {
				here := append(slices.Clone(path), k)
				meta := len(here) == 2 && here[0] == "metadata" && (k == "labels" || k == "annotations")
				// The snapshot's map itself: the snapshot is only read.
				p.drops = append(p.drops, mapDrop{path: here, read: m, keyByKey: meta})
			}
		case map[string]any:
			if b, ok := before[k].(map[string]any); ok {
				p.collectDrops(v, b, append(path, k))
			}
		}
	}
}

// dropApplied removes from the merge patch body every field that latest
// already holds with that value (a removal of a field latest lacks
// included), and the maps left empty by that.
func dropApplied(body, latest map[string]any) {
	for k, v := range body {
		have, ok := latest[k]
		switch v := v.(type) {
		case nil:
			if !ok || have == nil {
				delete(body, k)
			}
		case map[string]any:
			if h, isMap := have.(map[string]any); isMap {
				dropApplied(v, h)
				if len(v) == 0 {
					delete(body, k)
				}
			}
		default:
			if ok && object.EqualJSON(v, have) {
				delete(body, k)
			}
		}
	}
}

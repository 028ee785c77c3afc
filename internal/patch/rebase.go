package patch

import (
	"encoding/json"
	"maps"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/steadyk8s/steady/internal/object"
)

// list is a list a merge patch replaces whole, keyed per entry.
type list struct {
	path          []string
	key           func(any) string
	owned         []string // the owned condition types
	before, after []any
	// conditions: entries are conditions (keyed by type), whose
	// lastTransitionTime and observedGeneration follow the rules of rebase.
	conditions bool
}

func stringKey(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return rawKey(v)
}

// The keys of ownerReferences and conditions (made once: plan runs on
// every write).
var (
	uidKey  = fieldKey("uid")
	typeKey = fieldKey("type")
)

func fieldKey(field string) func(any) string {
	return func(v any) string {
		if m, ok := v.(map[string]any); ok {
			if s, ok := m[field].(string); ok && s != "" {
				return s
			}
		}
		return rawKey(v)
	}
}

// rawKey keys an entry without a key by its whole content.
func rawKey(v any) string {
	b, _ := json.Marshal(v)
	return "\x00" + string(b)
}

// hasOwned reports whether after holds an owned entry: its value is
// imposed on a rebase even where this change did not alter it.
func (l *list) hasOwned() bool {
	return slices.ContainsFunc(l.after, func(a any) bool { return slices.Contains(l.owned, ownedKey(a)) })
}

func index(items []any, key func(any) string) map[string]any {
	m := make(map[string]any, len(items))
	for _, it := range items {
		k := key(it)
		if _, dup := m[k]; !dup {
			m[k] = it
		}
	}
	return m
}

// rebase applies the change from before to after onto current, the list
// as the latest object has it:
//
//   - the entries this change added, changed or removed, and owned ones,
//     take after's value or go; every other entry stays as current has it
//     (one current lacks stays gone);
//   - the order is after's; an entry only current has keeps its place
//     after the entry that precedes it in current (first, if none does)
//     ([part.body] does not send a list that differs from current
//     in its order alone);
//   - a condition entry of ours whose status equals current's keeps
//     current's lastTransitionTime (the status did not flip); one whose
//     status is the snapshot's but no longer current's (another writer
//     flipped it since), with a lastTransitionTime no later than
//     current's, flips back now;
//   - a condition entry of ours with an observedGeneration lower than
//     current's, which is no higher than gen (the live generation), is
//     older than the live one: current's stays, and stale names its type
//     (an entry without observedGeneration claims no generation).
func (l *list) rebase(current []any, gen int64) (out []any, stale string) {
	bi, ai := index(l.before, l.key), index(l.after, l.key)
	ci := index(current, l.key)
	ours := l.ours(bi, ai)
	// The entries are shared with after and current, not copied: nothing
	// changes them in place (condition and stampGeneration change copies).
	out = make([]any, 0, len(l.after)+len(current))
	placed := map[string]bool{}
	for _, a := range l.after {
		k := l.key(a)
		if placed[k] {
			continue
		}
		c, inCurrent := ci[k]
		switch {
		case !ours[k] && !inCurrent:
			continue // another writer removed it since
		case !ours[k]:
			a = c
		case inCurrent && l.conditions:
			var older bool
			if a, older = l.condition(a, bi[k], c, gen); older {
				stale = k
			}
		}
		placed[k] = true
		out = append(out, a)
	}
	// Entries only current has, each after the entry before it in current.
	var prev string
	havePrev := false
	for _, c := range current {
		k := l.key(c)
		if _, inAfter := ai[k]; !inAfter && !ours[k] && !placed[k] {
			at := 0
			if havePrev {
				at = slices.IndexFunc(out, func(v any) bool { return l.key(v) == prev }) + 1
			}
			out = slices.Insert(out, at, c)
			placed[k] = true
		}
		if placed[k] {
			prev, havePrev = k, true
		}
	}
	return out, stale
}

// ours are the keys of the entries this change added, changed or removed,
// and of the owned ones; bi and ai index before and after.
func (l *list) ours(bi, ai map[string]any) map[string]bool {
	ours := map[string]bool{}
	for k, a := range ai {
		if b, ok := bi[k]; !ok || !reflect.DeepEqual(a, b) || slices.Contains(l.owned, ownedKey(a)) {
			ours[k] = true
		}
	}
	for k := range bi {
		if _, ok := ai[k]; !ok {
			ours[k] = true
		}
	}
	return ours
}

// stampGeneration sets, in list (the entries to be sent), the
// observedGeneration of each condition of ours that observed gen to next.
func (l *list) stampGeneration(list []any, gen, next int64) {
	ours := l.ours(index(l.before, l.key), index(l.after, l.key))
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok || !ours[l.key(e)] || generation(m) != gen {
			continue
		}
		m = maps.Clone(m)
		m["observedGeneration"] = next
		list[i] = m
	}
}

// condition is our condition entry a rebased on the live entry c of its
// type: c itself when a is older (a lower observedGeneration than c's, and
// c's no higher than gen, the live generation: above it, c observed no
// generation of this object; a without one claims no generation, so it is
// not older), else a with c's lastTransitionTime where the status did not
// flip, and with now where it flips back from a transition newer than a's
// (a has the status b, the snapshot's entry, had: the flip is another
// writer's, made since the snapshot).
func (l *list) condition(a, b, c any, gen int64) (any, bool) {
	bm, _ := b.(map[string]any)
	am, aok := a.(map[string]any)
	cm, cok := c.(map[string]any)
	if !aok || !cok {
		return a, false
	}
	if ag, cg := generation(am), generation(cm); ag > 0 && ag < cg && cg <= gen {
		return c, true
	}
	t, ok := cm["lastTransitionTime"]
	if _, has := am["lastTransitionTime"]; !ok || !has {
		return a, false
	}
	switch {
	case am["status"] == cm["status"] && !reflect.DeepEqual(am["lastTransitionTime"], t):
		am = maps.Clone(am)
		am["lastTransitionTime"] = t
		return am, false
	case am["status"] != cm["status"] && bm != nil && bm["status"] == am["status"] && !after(am["lastTransitionTime"], t):
		// Another writer flipped it since we read it, and we flip it
		// back now: the snapshot's time would be a transition in the past.
		// (Not before the live one either, whose writer's clock may be
		// ahead of ours.)
		am = maps.Clone(am)
		am["lastTransitionTime"] = t
		if now := time.Now().UTC().Truncate(time.Second).Format(time.RFC3339); after(now, t) {
			am["lastTransitionTime"] = now
		}
		return am, false
	}
	return a, false
}

// after reports whether the time a is after b, both RFC 3339 strings; true
// where either does not parse (there is nothing to compare: leave a).
func after(a, b any) bool {
	as, _ := a.(string)
	bs, _ := b.(string)
	at, aerr := time.Parse(time.RFC3339, as)
	bt, berr := time.Parse(time.RFC3339, bs)
	return aerr != nil || berr != nil || at.After(bt)
}

// generation is a condition's observedGeneration (0 without one). The
// lists are maps of JSON types ([object.ToMapWithoutManagedFields]): an
// int64, a float64, or, from an unsigned Go field, a uint64.
func generation(m map[string]any) int64 {
	switch v := m["observedGeneration"].(type) {
	case int64:
		return v
	case float64:
		return int64(v)
	case uint64:
		return int64(min(v, math.MaxInt64))
	}
	return 0
}

func ownedKey(v any) string {
	if m, ok := v.(map[string]any); ok {
		s, _ := m["type"].(string)
		return s
	}
	return ""
}

// sameEntries reports whether a and b hold the same entries (by key, each
// once, with equal values) in any order.
func sameEntries(a, b []any, key func(any) string) bool {
	if len(a) != len(b) {
		return false
	}
	bi := make(map[string]any, len(b))
	for _, e := range b {
		k := key(e)
		if _, dup := bi[k]; dup {
			return false
		}
		bi[k] = e
	}
	for _, e := range a {
		k := key(e)
		c, ok := bi[k]
		if !ok || !object.EqualJSON(e, c) {
			return false
		}
		delete(bi, k)
	}
	return true
}

// equalList is [object.EqualJSON] of two lists (a nil and an empty one
// alike), entry by entry: the lists are not boxed in an interface (an
// allocation each, on every write).
func equalList(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !object.EqualJSON(a[i], b[i]) {
			return false
		}
	}
	return true
}

package patch

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

// planMain is plan as it was before the allocation diet (dd1f9f1): it
// takes apart bm, a deep copy of the snapshot. The oracle of
// TestPlanAsBeforeTheDiet.
func planMain(bm, snap, am map[string]any, obj client.Object, o Options) ([]*part, error) {
	if o.ObservedGeneration {
		if err := unstructured.SetNestedField(am, obj.GetGeneration(), "status", "observedGeneration"); err != nil {
			return nil, fmt.Errorf("setting status.observedGeneration: %w", err)
		}
	}
	all := []*list{
		{path: []string{"metadata", "finalizers"}, key: stringKey},
		{path: []string{"metadata", "ownerReferences"}, key: fieldKey("uid")},
	}
	condPaths := append([][]string{{"status", "conditions"}}, o.ConditionLists...)
	for _, p := range condPaths {
		if len(p) == 0 {
			continue
		}
		all = append(all, &list{path: p, key: fieldKey("type"), owned: o.OwnedConditions, conditions: true})
	}
	lists := all[:0]
	for _, l := range all {
		b, a := nested(bm, l.path), nested(am, l.path)
		var bok, aok bool
		l.before, bok = b.([]any)
		l.after, aok = a.([]any)
		if (b != nil && !bok) || (a != nil && !aok) {
			continue
		}
		unstructured.RemoveNestedField(bm, l.path...)
		unstructured.RemoveNestedField(am, l.path...)
		lists = append(lists, l)
	}
	all = lists
	gen, _, _ := unstructured.NestedInt64(bm, "metadata", "generation")
	sb, _ := bm["status"].(map[string]any)
	sa, _ := am["status"].(map[string]any)
	status := &part{status: true, gen: gen}
	status.diff = mergeDiffMain(map[string]any{"status": orEmpty(sb)}, map[string]any{"status": orEmpty(sa)})
	status.collectDrops(status.diff, snap, nil)
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
	main := &part{gen: gen}
	main.diff = mergeDiffMain(strip(bm), strip(am))
	main.collectDrops(main.diff, snap, nil)
	for _, l := range all {
		d := main.diff
		if l.path[0] == "status" {
			d = status.diff
		}
		if equalListMain(l.before, l.after) && !l.hasOwned() && (l.before == nil || !removes(d, l.path)) {
			continue
		}
		if l.path[0] == "status" {
			status.lists = append(status.lists, l)
		} else {
			main.lists = append(main.lists, l)
		}
	}
	var parts []*part
	if len(main.diff) > 0 || len(main.lists) > 0 {
		status.rest = main
	}
	for _, p := range []*part{status, main} {
		var err error
		if p.diff, err = object.AsJSON(p.diff); err != nil {
			return nil, err
		}
		if len(p.diff) > 0 || len(p.lists) > 0 {
			parts = append(parts, p)
		}
	}
	return parts, nil
}

// mergeDiffMain is the merge patch from before to after that plan made
// before the diet: every list in it, pruned (see prune); no difference is
// an empty map.
func mergeDiffMain(before, after map[string]any) map[string]any {
	d := object.MergeDiff(before, after)
	if d == nil {
		return map[string]any{}
	}
	prune(d, before)
	return d
}

// rebaseMain is list.rebase before the diet: every entry copied.
func rebaseMain(l *list, current []any, gen int64) (out []any, stale string) {
	bi, ai := index(l.before, l.key), index(l.after, l.key)
	ci := index(current, l.key)
	ours := l.ours(bi, ai)
	out = []any{}
	placed := map[string]bool{}
	for _, a := range l.after {
		k := l.key(a)
		if placed[k] {
			continue
		}
		c, inCurrent := ci[k]
		switch {
		case !ours[k] && !inCurrent:
			continue
		case !ours[k]:
			a = c
		case inCurrent && l.conditions:
			var older bool
			if a, older = l.condition(a, bi[k], c, gen); older {
				stale = k
			}
		}
		placed[k] = true
		out = append(out, runtime.DeepCopyJSONValue(a))
	}
	var prev string
	havePrev := false
	for _, c := range current {
		k := l.key(c)
		if _, inAfter := ai[k]; !inAfter && !ours[k] && !placed[k] {
			at := 0
			if havePrev {
				at = slices.IndexFunc(out, func(v any) bool { return l.key(v) == prev }) + 1
			}
			out = slices.Insert(out, at, runtime.DeepCopyJSONValue(c))
			placed[k] = true
		}
		if placed[k] {
			prev, havePrev = k, true
		}
	}
	return out, stale
}

// equalListMain is equalList before the diet.
func equalListMain(a, b []any) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return object.EqualJSON(a, b)
}

// The extra condition lists of oracleObject, and the option sets that name
// them (some not a list in every object, some nested, one twice).
var oracleListOptions = [][][]string{
	nil,
	{{"status", "extra"}},
	{{"spec", "k0", "conds"}},
	{{"status", "conditions"}},
	{{"status", "extra"}, {"status", "deep", "conds"}, {"spec", "k0", "conds"}},
	{{"status", "deep", "conds"}, {"status", "deep", "more"}},
	{{"spec", "k1"}},
	{{"metadata", "conds"}},
	{{"metadata", "ownerReferences"}, {"metadata", "finalizers"}},
}

func oracleCond(rng *rand.Rand, typ string) map[string]any {
	c := cond(typ, rng)
	if rng.IntN(2) == 0 {
		c["observedGeneration"] = int64(1 + rng.IntN(3))
	}
	if rng.IntN(4) == 0 {
		c["extra"] = map[string]any{"n": int64(rng.IntN(3))}
	}
	return c
}

func oracleConds(rng *rand.Rand, prefix string) []any {
	var out []any
	for i := range rng.IntN(4) {
		out = append(out, oracleCond(rng, fmt.Sprintf("%s%d", prefix, i)))
	}
	return out
}

// oracleObject is randomObject with ownerReferences, a generation, and
// condition lists at every path of oracleListOptions (or a null, or no list).
func oracleObject(rng *rand.Rand) map[string]any {
	o := randomObject(rng)
	md := o["metadata"].(map[string]any)
	md["generation"] = int64(1 + rng.IntN(3))
	md["uid"] = "u1"
	md["resourceVersion"] = "5"
	if rng.IntN(2) == 0 {
		md["ownerReferences"] = []any{map[string]any{"uid": "o1", "name": "a", "kind": "K", "apiVersion": "v1"}}
	}
	st := o["status"].(map[string]any)
	if rng.IntN(2) == 0 {
		st["conditions"] = oracleConds(rng, "C")
	}
	put := func(m map[string]any, k string) {
		switch rng.IntN(5) {
		case 0:
		case 1:
			m[k] = nil
		default:
			m[k] = oracleConds(rng, "X")
		}
	}
	put(st, "extra")
	if rng.IntN(2) == 0 {
		deep := map[string]any{"keep": "k"}
		put(deep, "conds")
		put(deep, "more")
		st["deep"] = deep
	}
	if rng.IntN(2) == 0 {
		put(md, "conds")
	}
	spec := o["spec"].(map[string]any)
	if rng.IntN(2) == 0 {
		k0 := map[string]any{"x": "y"}
		put(k0, "conds")
		spec["k0"] = k0
	}
	return o
}

// oracleChange changes a like ours, and the extra lists too.
func oracleChange(rng *rand.Rand, a map[string]any) {
	ours(rng, a)
	for range rng.IntN(3) {
		var m map[string]any
		var k string
		switch rng.IntN(5) {
		case 0:
			m, k = a["status"].(map[string]any), "extra"
		case 1:
			d, _ := a["status"].(map[string]any)["deep"].(map[string]any)
			m, k = d, "conds"
		case 2:
			k0, _ := a["spec"].(map[string]any)["k0"].(map[string]any)
			m, k = k0, "conds"
		case 3:
			m, k = a["metadata"].(map[string]any), "ownerReferences"
		case 4:
			st := a["status"].(map[string]any)
			if rng.IntN(3) == 0 {
				delete(st, "deep")
				continue
			}
			m, k = st, "conditions"
		}
		if m == nil {
			continue
		}
		switch rng.IntN(4) {
		case 0:
			delete(m, k)
		case 1:
			m[k] = nil
		default:
			l, _ := m[k].([]any)
			l = slices.Clone(l)
			if len(l) > 0 && rng.IntN(2) == 0 {
				c := runtime.DeepCopyJSONValue(l[0]).(map[string]any)
				c["status"] = "Changed"
				l[0] = c
			} else if k == "ownerReferences" {
				l = append(l, map[string]any{"uid": fmt.Sprintf("o%d", 2+rng.IntN(3)), "name": "b"})
			} else {
				l = append(l, oracleCond(rng, fmt.Sprintf("N%d", rng.IntN(3))))
			}
			m[k] = l
		}
	}
}

// oracleForeign is foreign, and another writer's entries in the extra
// lists, and a bumped generation.
func oracleForeign(rng *rand.Rand, l map[string]any) {
	foreign(rng, l)
	if rng.IntN(2) == 0 {
		md := l["metadata"].(map[string]any)
		md["generation"] = md["generation"].(int64) + 1
	}
	if ex, ok := l["status"].(map[string]any)["extra"].([]any); ok && rng.IntN(2) == 0 {
		l["status"].(map[string]any)["extra"] = append(slices.Clone(ex), oracleCond(rng, "Theirs"))
	}
	if cs, ok := l["status"].(map[string]any)["conditions"].([]any); ok && len(cs) > 0 && rng.IntN(2) == 0 {
		cs = slices.Clone(cs)
		c := runtime.DeepCopyJSONValue(cs[0]).(map[string]any)
		c["status"], c["lastTransitionTime"] = "Flipped", "2025-01-01T00:00:00Z"
		cs[0] = c
		l["status"].(map[string]any)["conditions"] = cs
	}
}

func oracleOptions(rng *rand.Rand) Options {
	o := Options{ObservedGeneration: rng.IntN(2) == 0, ConditionLists: oracleListOptions[rng.IntN(len(oracleListOptions))]}
	if rng.IntN(2) == 0 {
		o.OwnedConditions = []string{"C0", "X1"}
	}
	return o
}

// The diet's plan, rebase and equalList against the engine before it, on
// random objects, changes, options and another writer's latest state: the
// same parts (diffs, drops, lists), the same rebased lists, the same bodies
// (with a status written with the object too), the same bytes as
// encoding/json, and the snapshot, the object as changed and the latest
// state read but never changed, however often the bodies are built (a
// retry after a conflict).
func TestPlanAsBeforeTheDiet(t *testing.T) {
	for seed := range uint64(3000) {
		rng := rand.New(rand.NewPCG(seed, 99))
		before := oracleObject(rng)
		after := runtime.DeepCopyJSON(before)
		oracleChange(rng, after)
		latest := runtime.DeepCopyJSON(before)
		oracleForeign(rng, latest)
		o := oracleOptions(rng)
		obj := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(after)}
		fallback := rng.IntN(3) == 0

		snap := runtime.DeepCopyJSON(before)
		newParts, err := plan(snap, obj, o)
		oldParts, oerr := planMain(runtime.DeepCopyJSON(before), runtime.DeepCopyJSON(before), runtime.DeepCopyJSON(after), obj, o)
		if (err == nil) != (oerr == nil) {
			t.Fatalf("seed %d: plan error %v, before the diet %v", seed, err, oerr)
		}
		if err != nil {
			continue
		}
		if !reflect.DeepEqual(snap, before) {
			t.Fatalf("seed %d: plan changed the snapshot", seed)
		}
		if len(newParts) != len(oldParts) {
			t.Fatalf("seed %d: %d parts, before the diet %d", seed, len(newParts), len(oldParts))
		}
		for i := range newParts {
			np, op := newParts[i], oldParts[i]
			if !reflect.DeepEqual(np.diff, op.diff) || np.status != op.status || np.gen != op.gen || (np.rest == nil) != (op.rest == nil) {
				t.Fatalf("seed %d part %d: diff %v, before the diet %v", seed, i, np.diff, op.diff)
			}
			if !reflect.DeepEqual(np.drops, op.drops) && !(len(np.drops) == len(op.drops) && sameDrops(np.drops, op.drops)) {
				t.Fatalf("seed %d part %d: drops %v, before the diet %v", seed, i, np.drops, op.drops)
			}
			nlists := np.lists
			if len(nlists) != len(op.lists) {
				t.Fatalf("seed %d part %d: %d lists, before the diet %d (options %v)", seed, i, len(np.lists), len(op.lists), o.ConditionLists)
			}
			for j := range nlists {
				nl, ol := nlists[j], op.lists[j]
				if !slices.Equal(nl.path, ol.path) || !reflect.DeepEqual(nl.before, ol.before) || !reflect.DeepEqual(nl.after, ol.after) {
					t.Fatalf("seed %d: list %v, before the diet %v", seed, nl.path, ol.path)
				}
				if equalList(nl.before, nl.after) != equalListMain(nl.before, nl.after) {
					t.Fatalf("seed %d: equalList(%v, %v) differs", seed, nl.before, nl.after)
				}
				cur, _ := nested(latest, nl.path).([]any)
				gen, _, _ := unstructured.NestedInt64(latest, "metadata", "generation")
				got, gs := nl.rebase(cur, gen)
				want, ws := rebaseMain(ol, cur, gen)
				if gs != ws || !reflect.DeepEqual(withoutNow(got), withoutNow(want)) || equalList(got, cur) != equalListMain(want, cur) {
					t.Fatalf("seed %d: rebase of %v = %v %q, before the diet %v %q", seed, nl.path, got, gs, want, ws)
				}
			}
		}
		if fallback && len(newParts) > 0 && newParts[0].status {
			for _, ps := range [][]*part{newParts, oldParts} {
				p := ps[0]
				p.status, p.fallback = false, true
				if r := p.rest; r != nil {
					for k, v := range r.diff {
						p.diff[k] = v
					}
					p.lists = append(p.lists, r.lists...)
					p.drops = append(p.drops, r.drops...)
					r.merged = true
				}
			}
		}
		latestCopy := runtime.DeepCopyJSON(latest)
		afterCopy := runtime.DeepCopyJSON(after)
		for i := range newParts {
			if newParts[i].merged {
				continue
			}
			var first []byte
			for attempt := range 3 { // a retry builds the body again
				nb, nlock, ns, nerr := newParts[i].body(latest, nil, nil, o)
				ob, olock, os, oerr := oldParts[i].body(latest, nil, nil, o)
				if (nerr == nil) != (oerr == nil) || ns != os || nlock != olock || !reflect.DeepEqual(withoutNow(nb), withoutNow(ob)) {
					t.Fatalf("seed %d part %d attempt %d: body %v %v %q %v, before the diet %v %v %q %v", seed, i, attempt, nb, nlock, ns, nerr, ob, olock, os, oerr)
				}
				if nb == nil {
					continue
				}
				setPrecondition(nb, "uid", "u1")
				setPrecondition(nb, "resourceVersion", "5")
				got, err := json.Marshal(nb)
				want, werr := json.Marshal(nb)
				if (err == nil) != (werr == nil) || string(got) != string(want) {
					t.Fatalf("seed %d: MarshalJSON %s %v, encoding/json %s %v", seed, got, err, want, werr)
				}
				if attempt == 0 {
					first = []byte(mustJSONOf(withoutNow(nb)))
				} else if string(mustJSONOf(withoutNow(nb))) != string(first) {
					t.Fatalf("seed %d: the body built again is %s, first %s", seed, got, first)
				}
			}
		}
		if !reflect.DeepEqual(snap, before) || !reflect.DeepEqual(latest, latestCopy) || !reflect.DeepEqual(after, afterCopy) {
			t.Fatalf("seed %d: building the bodies changed the snapshot, the latest state or the object", seed)
		}
	}
}

func sameDrops(a, b []mapDrop) bool {
	key := func(d mapDrop) string { return fmt.Sprint(d.path) }
	am := map[string]mapDrop{}
	for _, d := range a {
		am[key(d)] = d
	}
	for _, d := range b {
		if x, ok := am[key(d)]; !ok || !reflect.DeepEqual(x, d) {
			return false
		}
	}
	return true
}

// withoutNow is a copy of v with every lastTransitionTime later than the
// latest's (a flip back, stamped now) replaced by "now": two bodies built a
// second apart are alike.
func withoutNow(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if s, ok := e.(string); ok && k == "lastTransitionTime" && s > "2025-01-01T00:00:00Z" {
				e = "now"
			}
			out[k] = withoutNow(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = withoutNow(e)
		}
		return out
	}
	return v
}

package ownership

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/steadyk8s/steady/internal/object"
)

// otherSets returns the field sets (managedFields) of live's field
// managers but this controller's, the one that set the controller
// reference want carries. Those of a subresource's writes are others' too:
// an autoscaler owns spec.replicas through the scale subresource, a
// Deployment's controller its revision annotation through the status
// subresource, and an update of the object removes both (their status
// fields are not compared: see othersRemoved). It returns none
// where no manager set that reference, or live has no managedFields
// (stripped by a cache transform): others cannot be told from ours.
func otherSets(live, want client.Object) (sets []managerSet, ours string) {
	ref := metav1.GetControllerOf(want)
	if ref == nil {
		return nil, ""
	}
	reference := fmt.Sprintf(`k:{\"uid\":\"%s\"}`, ref.UID) // as the field set names the reference
	for _, f := range live.GetManagedFields() {
		if f.Subresource == "" && f.FieldsV1 != nil && strings.Contains(string(f.FieldsV1.Raw), reference) {
			ours = f.Manager
			break
		}
	}
	if ours == "" {
		return nil, ""
	}
	return object.FieldSets(live, func(f metav1.ManagedFieldsEntry) bool { return f.Manager == ours }), ours
}

// othersRemoved names the fields of liveMap that the managers of others
// (see otherSets) set and that a write of wantMap would remove, each with
// those managers: "spec.template.metadata.annotations[kubectl.kubernetes.io/restartedAt]
// (kubectl-rollout)". A field wantMap changes but keeps (drift put back,
// a replica count set again) is not named: only removals; nor the status.
func othersRemoved(others []managerSet, liveMap, wantMap map[string]any) []string {
	found := map[string]sets.Set[string]{}
	removedIn(withoutStatus(liveMap), withoutStatus(wantMap), "", others, found)
	out := make([]string, 0, len(found))
	for path, managers := range found {
		out = append(out, fmt.Sprintf("%s (%s)", path, strings.Join(sets.List(managers), ", ")))
	}
	sort.Strings(out)
	return out
}

// managerSet is one field manager's field set, or a node of it.
type managerSet = object.FieldSet

// removedIn records in found, by path, the managers of others that own a
// field of live (a map) that want does not have, under path.
func removedIn(live, want map[string]any, path string, others []managerSet, found map[string]sets.Set[string]) {
	for k, lv := range live {
		under := descend(others, "f:"+k)
		if len(under) == 0 {
			continue // no other manager owns anything here
		}
		p := fieldPath(path, k)
		wv, kept := want[k]
		if !kept || object.IsNull(wv) {
			// Named down to what each manager owns: the annotation, not
			// the annotations.
			before := len(found)
			switch l := lv.(type) {
			case map[string]any:
				removedIn(l, nil, p, under, found)
			case []any:
				removedElements(l, nil, p, under, found)
			}
			if len(found) == before && !object.IsNull(lv) {
				mark(found, p, under)
			}
			continue
		}
		switch l := lv.(type) {
		case map[string]any:
			if w, ok := wv.(map[string]any); ok {
				removedIn(l, w, p, under, found)
			}
		case []any:
			if w, ok := wv.([]any); ok {
				removedElements(l, w, p, under, found)
			}
		}
	}
}

// removedElements is removedIn for a list: an element another manager
// owns (by its key, "k:{...}", or its value, "v:...") that live has and
// want has not.
func removedElements(live, want []any, path string, others []managerSet, found map[string]sets.Set[string]) {
	for _, s := range others {
		for k := range s.Set {
			var in func([]any) bool
			switch {
			case strings.HasPrefix(k, "k:"):
				var key map[string]any
				if json.Unmarshal([]byte(k[2:]), &key) != nil {
					continue
				}
				in = func(list []any) bool { _, at := elementWithKey(list, key); return at >= 0 }
			case strings.HasPrefix(k, "v:"):
				var v any
				if json.Unmarshal([]byte(k[2:]), &v) != nil {
					continue
				}
				in = func(list []any) bool { return indexOfValue(list, v) >= 0 }
			default:
				continue
			}
			if in(live) && !in(want) {
				mark(found, path+"["+k[2:]+"]", []managerSet{s})
			}
		}
	}
}

func mark(found map[string]sets.Set[string], path string, under []managerSet) {
	if found[path] == nil {
		found[path] = sets.New[string]()
	}
	for _, s := range under {
		found[path].Insert(s.Manager)
	}
}

// fieldPath is path's field k: "a.b", or "a[k]" for a key that is not a
// plain name (a label, an annotation).
func fieldPath(path, k string) string {
	if strings.ContainsAny(k, "./") {
		return path + "[" + k + "]"
	}
	if path == "" {
		return k
	}
	return path + "." + k
}

// warnOthersRemoved logs, on ctx's logger, what of other field managers'
// (sets) an update of wantMap over liveMap removes (see othersRemoved): a
// shared child written whole, which Apply, or a mutate that sets fields one
// by one, would keep.
func warnOthersRemoved(ctx context.Context, name fmt.Stringer, sets []managerSet, liveMap, wantMap map[string]any) []string {
	removed := othersRemoved(sets, liveMap, wantMap)
	if len(removed) == 0 {
		return nil
	}
	log.FromContext(ctx).Info(fmt.Sprintf("ownership: updating %s removes what other field managers set: %s; "+
		"set the child's fields one by one on the child as read, or use ownership.Apply, to keep them", name, strings.Join(removed, "; ")))
	return removed
}

// warnOthersLost logs, on ctx's logger, what of other field managers'
// (before, their sets in the child as read) an update of a typed child
// removed that the child's Go type could not show (a field added to the
// kind since the type was built): the field sets of those managers in
// answer, the API server's answer, no longer hold it, and neither does
// ours (the manager that set the controller reference: a value it set
// again is a change, not a removal). liveMap is the child as read, as its
// Go type shows it (nil: unknown): a field it shows the type holds, and its
// removal is the mutate's (see warnOthersRemoved), not the type's. named
// are the fields logged before the update, not logged again.
func warnOthersLost(ctx context.Context, name fmt.Stringer, before []managerSet, ours string, liveMap map[string]any, answer client.Object, named []string) {
	after := map[string][]map[string]any{}
	for _, s := range object.FieldSets(answer, nil) {
		after[s.Manager] = append(after[s.Manager], s.Set)
	}
	found := map[string]sets.Set[string]{}
	for _, b := range before {
		lostIn(b.Set, after[b.Manager], after[ours], liveMap, "", b.Manager, found)
	}
	var lost []string
	for path, managers := range found {
		entry := fmt.Sprintf("%s (%s)", path, strings.Join(sets.List(managers), ", "))
		if !slices.Contains(named, entry) {
			lost = append(lost, entry)
		}
	}
	if len(lost) == 0 {
		return
	}
	sort.Strings(lost)
	log.FromContext(ctx).Info(fmt.Sprintf("ownership: updating %s removed what other field managers set, which its Go type %T cannot hold: %s; "+
		"read the child as unstructured, or use ownership.Apply, to keep them", name, answer, strings.Join(lost, "; ")))
}

// lostIn records in found, by path, the fields of node (a node of
// manager's field set as read) that no node of afters (its sets in the
// answer) nor of ours holds any more, and that live (the node of the child
// as its Go type read it; nil where it shows none) does not show: a field
// it shows the Go type holds. The status, which an update does not write,
// is left out.
func lostIn(node map[string]any, afters, ours []map[string]any, live any, path, manager string, found map[string]sets.Set[string]) {
	for k, sub := range node {
		var p string
		var shown any // the field in live, nil where it does not show it
		switch {
		case path == "" && k == "f:status", k == ".":
			continue
		case strings.HasPrefix(k, "f:"):
			p = fieldPath(path, k[2:])
			if m, ok := live.(map[string]any); ok {
				shown = m[k[2:]]
			}
		case strings.HasPrefix(k, "k:"), strings.HasPrefix(k, "v:"):
			p = path + "[" + k[2:] + "]"
			shown = element(live, k)
		default:
			continue
		}
		nexts, ourNexts := object.FieldChildren(afters, k), object.FieldChildren(ours, k)
		if len(nexts) == 0 && len(ourNexts) == 0 && shown == nil {
			mark(found, p, []managerSet{{Manager: manager}})
			continue
		}
		if m, ok := sub.(map[string]any); ok {
			lostIn(m, nexts, ourNexts, shown, p, manager, found)
		}
	}
}

// element is the element of live, a list, that k names ("k:{...}" by its
// key, "v:..." by its value); nil where there is none.
func element(live any, k string) any {
	list, ok := live.([]any)
	if !ok {
		return nil
	}
	switch {
	case strings.HasPrefix(k, "k:"):
		var key map[string]any
		if json.Unmarshal([]byte(k[2:]), &key) == nil {
			if e, at := elementWithKey(list, key); at >= 0 {
				return e
			}
		}
	case strings.HasPrefix(k, "v:"):
		var v any
		if json.Unmarshal([]byte(k[2:]), &v) == nil {
			if at := indexOfValue(list, v); at >= 0 {
				return list[at]
			}
		}
	}
	return nil
}

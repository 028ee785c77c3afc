package ownership

import (
	"reflect"

	"github.com/steadyk8s/steady/internal/object"
)

// serverMetadata are the metadata fields the API server owns: they are not
// compared and never written.
var serverMetadata = []string{"resourceVersion", "managedFields", "generation", "uid", "creationTimestamp",
	"selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"}

func withoutServerMetadata(m map[string]any) map[string]any {
	md, ok := m["metadata"].(map[string]any)
	if !ok {
		return m
	}
	for _, f := range serverMetadata {
		delete(md, f)
	}
	for _, f := range []string{"labels", "annotations", "ownerReferences", "finalizers"} {
		if v, ok := md[f]; ok && empty(v) {
			delete(md, f) // absent and empty mean the same to the API server
		}
	}
	return m
}

// withoutStatus is m, an object as a map, without its status and its type
// meta (apiVersion and kind, which a cached copy carries and a child built
// by the caller may not: what the sums of the desired object and the
// patches compare is its content).
func withoutStatus(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != "status" && k != "apiVersion" && k != "kind" {
			out[k] = v
		}
	}
	return out
}

// sameObject compares two objects in map form without the server's
// metadata (see [withoutServerMetadata]) exactly, statuses absent and
// empty alike, without copying them.
func sameObject(a, b map[string]any) bool {
	for k, av := range a {
		if k == "status" {
			continue
		}
		if bv, ok := b[k]; !ok || !object.EqualJSON(av, bv) {
			return false
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok && k != "status" {
			return false
		}
	}
	return equalStatus(a["status"], b["status"])
}

// equalStatus compares two statuses exactly; absent and empty are the same.
func equalStatus(a, b any) bool {
	if empty(a) && empty(b) {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

// keeps reports whether answer, the API server's answer to a create or
// update of want, holds every value want sets: what differs is only what
// the server filled in (a default, a field a webhook added). A value it
// changed (a webhook that rewrites a field on create only, a value the
// server normalized) is a difference the next call must compare, and
// write if an update would change it: no verdict "only defaults differ" is
// taken from such an answer. A null or empty object in want sets nothing;
// a list must be as long in answer, element by element kept.
func keeps(want, answer any) bool {
	if object.IsNull(want) {
		return true
	}
	switch w := want.(type) {
	case map[string]any:
		a, _ := answer.(map[string]any)
		for k, wv := range w {
			if !keeps(wv, a[k]) {
				return false
			}
		}
		return true
	case []any:
		a, _ := answer.([]any)
		if len(a) != len(w) {
			return false
		}
		for i := range w {
			if !keeps(w[i], a[i]) {
				return false
			}
		}
		return true
	}
	return object.EqualJSON(want, answer)
}

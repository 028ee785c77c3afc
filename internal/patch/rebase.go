package patch

import (
	"encoding/json"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
)

// list is a list a merge patch replaces whole, keyed per entry.
type list struct {
	path          []string
	key           func(any) string
	owned         map[string]bool
	before, after []any
}

func stringKey(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return rawKey(v)
}

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

func (l *list) changed() bool { return !equalList(l.before, l.after) }

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

// rebase applies the change from before to after onto current: the entries
// this change added, changed or removed (and owned ones) take after's value
// or go; all others stay as current has them, in current's order; new
// entries are appended in after's order.
func (l *list) rebase(current []any) []any {
	bi, ai := index(l.before, l.key), index(l.after, l.key)
	ours := map[string]bool{}
	for k, a := range ai {
		if b, ok := bi[k]; !ok || !reflect.DeepEqual(a, b) || l.owned[ownedKey(a)] {
			ours[k] = true
		}
	}
	for k := range bi {
		if _, ok := ai[k]; !ok {
			ours[k] = true
		}
	}
	out := []any{}
	seen := map[string]bool{}
	for _, c := range current {
		k := l.key(c)
		if seen[k] {
			continue
		}
		seen[k] = true
		if !ours[k] {
			out = append(out, runtime.DeepCopyJSONValue(c))
		} else if a, ok := ai[k]; ok {
			out = append(out, runtime.DeepCopyJSONValue(a))
		}
	}
	for _, a := range l.after {
		k := l.key(a)
		if ours[k] && !seen[k] {
			seen[k] = true
			out = append(out, runtime.DeepCopyJSONValue(a))
		}
	}
	return out
}

func ownedKey(v any) string {
	if m, ok := v.(map[string]any); ok {
		s, _ := m["type"].(string)
		return s
	}
	return ""
}

func equalList(a, b []any) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(normalize(a), normalize(b))
}

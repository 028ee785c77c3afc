package patch

import (
	"fmt"
	"strings"
)

func nested(m map[string]any, path []string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

func removeNested(m map[string]any, path []string) {
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			return
		}
		m = next
	}
	delete(m, path[len(path)-1])
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

func setNested(m map[string]any, v any, path []string) error {
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			if m[p] != nil {
				return fmt.Errorf("field %s is not an object", strings.Join(path, "."))
			}
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
	return nil
}

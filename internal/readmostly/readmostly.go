// Package readmostly is a map for the caches steady's helpers read on
// every call and write about once per key (a kind, per cluster): a read
// is a lookup in a plain Go map behind an atomic pointer, without a lock,
// and without sync.Map's hashing of an interface key, which walks a struct
// key's fields through its type (several hundred instructions for a
// group, version and kind, twice a plain map's lookup). A write that
// changes the map copies it.
package readmostly

import (
	"maps"
	"sync"
	"sync/atomic"
)

// Map is a read-mostly map; its zero value is empty and ready to use.
type Map[K, V comparable] struct {
	mu sync.Mutex // serializes writes
	m  atomic.Pointer[map[K]V]
}

// Load returns the value of k, and whether there is one.
func (m *Map[K, V]) Load(k K) (V, bool) {
	if p := m.m.Load(); p != nil {
		v, ok := (*p)[k]
		return v, ok
	}
	var zero V
	return zero, false
}

// Store sets k to v. It copies the map unless k has v already: for keys
// that are few and rarely written.
func (m *Map[K, V]) Store(k K, v V) {
	if old, ok := m.Load(k); ok && old == v {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	next := make(map[K]V, m.Len()+1)
	if p := m.m.Load(); p != nil {
		maps.Copy(next, *p)
	}
	next[k] = v
	m.m.Store(&next)
}

// Len is the number of keys.
func (m *Map[K, V]) Len() int {
	if p := m.m.Load(); p != nil {
		return len(*p)
	}
	return 0
}

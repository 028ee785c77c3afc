// Package identity keys maps by the identity of a pointer-shaped value (a
// cache, a client, a cluster's REST mapper) without keeping the value alive,
// and names the cluster a client talks to by its REST mapper: one per
// controller-runtime cluster.Cluster (a manager, or each cluster of a
// multicluster-runtime fleet), shared by its cached client and its reader.
package identity

import (
	"reflect"
	"sync"
	"weak"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Key is the identity of a value: it never equals the key of another value,
// even one allocated later at the same address (a weak pointer's identity is
// its object's, not its address), and it does not keep the value alive.
type Key = weak.Pointer[byte]

// Of returns v's identity, and false for values that have none: a nil or
// non-pointer value, or a pointer to a zero-sized type (all of which share
// one address). A [Standin]'s identity is that of the value it names.
func Of(v any) (Key, bool) {
	if s, ok := v.(Standin); ok {
		v = s.StandsFor()
	}
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Type().Elem().Size() == 0 {
		return Key{}, false
	}
	return weak.Make((*byte)(rv.UnsafePointer())), true
}

// Standin is a value made anew on each call that stands for one value
// remembered elsewhere (multicluster's field indexer of a manager, made per
// call so that it does not keep the manager alive): its identity is that of
// the value StandsFor returns.
type Standin interface{ StandsFor() any }

// Cluster is the identity of the cluster c talks to: its REST mapper's. Two
// clients of one manager share it; a client whose mapper has no identity
// gets the zero Key, which all such clients share (the knowledge of one
// process, as if there were one cluster); so does a nil or typed nil client.
func Cluster(c client.Client) Key {
	if c == nil {
		return Key{}
	}
	if v := reflect.ValueOf(c); v.Kind() == reflect.Pointer && v.IsNil() {
		return Key{} // a typed nil client: calling it would panic
	}
	k, _ := Of(c.RESTMapper())
	return k
}

// Map maps values, by identity, to what is remembered about them, without
// keeping them alive: what is remembered of a value lives as long as the
// value (a manager, a cache, a client) does, and entries of values that
// were garbage collected are dropped as new ones come. The zero Map is
// empty and ready to use, safe for concurrent use.
type Map[V any] struct {
	mu sync.Mutex
	m  map[Key]V
}

// Update runs f on what is remembered about v (the zero V at first) and
// remembers what f returns. It reports false, without calling f, when v
// has no identity (see [Of]).
func (b *Map[V]) Update(v any, f func(V) V) bool {
	id, ok := Of(v)
	if !ok {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[Key]V{}
	}
	for k := range b.m {
		if k.Value() == nil {
			delete(b.m, k)
		}
	}
	b.m[id] = f(b.m[id])
	return true
}

// Get returns what is remembered about v; a map or slice it returns is
// shared: Update must replace it, not change it.
func (b *Map[V]) Get(v any) (V, bool) {
	var zero V
	id, ok := Of(v)
	if !ok {
		return zero, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	got, ok := b.m[id]
	return got, ok
}

package indexer

import (
	"maps"
	"sync"

	identitypkg "github.com/steadyk8s/steady/internal/identity"
)

// identity is a key for a pointer-shaped value (a cache, a client): see
// [identity.Key].
type identity = identitypkg.Key

// identityOf returns v's identity: see [identity.Of].
func identityOf(v any) (identity, bool) { return identitypkg.Of(v) }

// byIdentity maps values, by identity, to what is remembered about them;
// entries of values that were garbage collected are dropped as new ones
// come.
type byIdentity[V any] struct {
	mu sync.Mutex
	m  map[identity]V
}

// update runs f on what is remembered about v (the zero V at first) and
// remembers what f returns. It reports false, without calling f, when v
// has no identity.
func (b *byIdentity[V]) update(v any, f func(V) V) bool {
	id, ok := identityOf(v)
	if !ok {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[identity]V{}
	}
	for k := range b.m {
		if k.Value() == nil {
			delete(b.m, k)
		}
	}
	b.m[id] = f(b.m[id])
	return true
}

// get returns what is remembered about v; a map or slice it returns is
// shared: update must replace it, not change it.
func (b *byIdentity[V]) get(v any) (V, bool) {
	var zero V
	id, ok := identityOf(v)
	if !ok {
		return zero, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	got, ok := b.m[id]
	return got, ok
}

// withEntry returns a copy of m with k set to v: a remembered map is
// replaced, never changed, because readers outside the lock hold it.
func withEntry[K comparable, V any](m map[K]V, k K, v V) map[K]V {
	out := maps.Clone(m)
	if out == nil {
		out = map[K]V{}
	}
	out[k] = v
	return out
}

package ownership

import (
	"container/list"
	"crypto/sha256"
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// memorySize bounds each of ownership's memories (the verdicts of
// CreateOrUpdate and CreateOrPatch, the answers of Apply): the children
// least recently used are forgotten beyond it. An entry is a few hundred
// bytes (its key names the child), so a full memory holds about 2 MB.
const memorySize = 8192

// memo is what ownership remembers of one child: the child as the API
// server last showed it (its UID and resourceVersion) and a sum of what the
// call wanted then.
type memo struct {
	uid types.UID
	rv  string
	sum [sha256.Size]byte
}

// memory is a bounded map, least recently used out first, safe for
// concurrent use.
type memory struct {
	mu    sync.Mutex
	size  int
	order *list.List // of *memoryItem, most recent first
	items map[string]*list.Element
}

type memoryItem struct {
	key string
	memo
}

func newMemory(size int) *memory {
	return &memory{size: size, order: list.New(), items: map[string]*list.Element{}}
}

// get returns what is remembered of key.
func (m *memory) get(key string) (memo, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.items[key]
	if !ok {
		return memo{}, false
	}
	m.order.MoveToFront(e)
	return e.Value.(*memoryItem).memo, true
}

// put remembers v for key, in place of what was remembered.
func (m *memory) put(key string, v memo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.items[key]; ok {
		e.Value.(*memoryItem).memo = v
		m.order.MoveToFront(e)
		return
	}
	m.items[key] = m.order.PushFront(&memoryItem{key: key, memo: v})
	for m.order.Len() > m.size {
		last := m.order.Back()
		m.order.Remove(last)
		delete(m.items, last.Value.(*memoryItem).key)
	}
}

// forget drops what is remembered of key.
func (m *memory) forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.items[key]; ok {
		m.order.Remove(e)
		delete(m.items, key)
	}
}

// len is the number of children remembered.
func (m *memory) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.order.Len()
}

// childKey names a child in a memory: its group, version, kind,
// namespace and name.
func childKey(gvk schema.GroupVersionKind, obj client.Object) string {
	return gvk.String() + "|" + obj.GetNamespace() + "|" + obj.GetName()
}

// sum is a digest of parts, each encoded as JSON (map keys sorted, so
// that equal content has equal sums).
func sum(parts ...any) ([sha256.Size]byte, error) {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, p := range parts {
		if err := enc.Encode(p); err != nil {
			return [sha256.Size]byte{}, err
		}
	}
	var out [sha256.Size]byte
	copy(out[:], h.Sum(nil))
	return out, nil
}

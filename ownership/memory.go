package ownership

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"hash/maphash"
	"reflect"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

// memorySize bounds each of ownership's two memories (the verdicts of
// CreateOrUpdate and CreateOrPatch, the answers of Apply): beyond it, the
// children least recently used are forgotten, and pay a write or an apply
// again (one the API server finds nothing to change in). An entry takes about 250 bytes whatever the child's name (keys
// are kept as digests), so a full memory holds about 2 MB.
const memorySize = 8192

// memo is what ownership remembers of one child: the child as the API
// server last showed it (its UID, resourceVersion, generation and a digest
// of its labels, annotations, finalizers and owner references) and a sum
// of what the call wanted then.
type memo struct {
	uid  types.UID
	rv   string
	gen  int64
	meta uint64
	sum  [sha256.Size]byte
	// status is, where statusSent, the sum of the desired status an
	// update carried that stored nothing: an update cannot write it.
	status     [sha256.Size]byte
	statusSent bool
}

// holds reports whether a verdict remembered in m still holds for live: it
// is the child the verdict was on (its UID) and, since, either nothing was
// stored (the same resourceVersion) or only its status changed: the same
// generation, which the API server bumps on a change of anything but
// metadata and a status subresource (a kind that sets one), and the same
// labels, annotations, finalizers and owner references. A workload's own
// controller writing its status (a Deployment's replicas, a Job's
// conditions) does not make a converged child cost a write.
func (m memo) holds(live client.Object) bool {
	if m.uid != live.GetUID() {
		return false
	}
	if m.rv == live.GetResourceVersion() {
		return true
	}
	return m.gen > 0 && m.gen == live.GetGeneration() && m.meta == metaDigest(live)
}

// metaDigest is a digest of obj's labels, annotations, finalizers and
// owner references: the metadata a write of ours compares, which a change
// leaves the generation as it was.
func metaDigest(obj client.Object) uint64 {
	var h, e maphash.Hash
	h.SetSeed(metaSeed)
	e.SetSeed(metaSeed)
	var buf [8]byte
	mapSum := func(m map[string]string) {
		s := uint64(len(m)) // entries hashed alone and added up: no order, no sort
		for k, v := range m {
			e.Reset()
			_, _ = e.WriteString(k)
			_ = e.WriteByte(0)
			_, _ = e.WriteString(v)
			s += e.Sum64()
		}
		_, _ = h.Write(binary.LittleEndian.AppendUint64(buf[:0], s))
	}
	mapSum(obj.GetLabels())
	mapSum(obj.GetAnnotations())
	for _, f := range obj.GetFinalizers() {
		_, _ = h.WriteString(f)
		_ = h.WriteByte(0)
	}
	_ = h.WriteByte(1)
	for _, r := range obj.GetOwnerReferences() {
		for _, f := range []string{r.APIVersion, r.Kind, r.Name, string(r.UID)} {
			_, _ = h.WriteString(f)
			_ = h.WriteByte(0)
		}
		_ = h.WriteByte(tri(r.Controller))
		_ = h.WriteByte(tri(r.BlockOwnerDeletion))
	}
	return h.Sum64()
}

// tri encodes an optional bool: unset, false, true.
func tri(b *bool) byte {
	switch {
	case b == nil:
		return 0
	case *b:
		return 2
	}
	return 1
}

// metaSeed seeds metaDigest: digests are compared within one process.
var metaSeed = maphash.MakeSeed()

// memory is a bounded map, least recently used out first, safe for
// concurrent use. Keys are kept as digests, so that an entry's size does
// not grow with the child's name.
type memory struct {
	mu    sync.Mutex
	size  int
	order *list.List // of *memoryItem, most recent first
	items map[memoryKey]*list.Element
}

// memoryKey is the digest of a key.
type memoryKey [16]byte

type memoryItem struct {
	key memoryKey
	memo
}

func digest(key string) memoryKey {
	s := sha256.Sum256([]byte(key))
	return memoryKey(s[:16])
}

func newMemory(size int) *memory {
	return &memory{size: size, order: list.New(), items: map[memoryKey]*list.Element{}}
}

// get returns what is remembered of key.
func (m *memory) get(key string) (memo, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.items[digest(key)]
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
	k := digest(key)
	if e, ok := m.items[k]; ok {
		e.Value.(*memoryItem).memo = v
		m.order.MoveToFront(e)
		return
	}
	m.items[k] = m.order.PushFront(&memoryItem{key: k, memo: v})
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
	if e, ok := m.items[digest(key)]; ok {
		m.order.Remove(e)
		delete(m.items, e.Value.(*memoryItem).key)
	}
}

// len is the number of children remembered.
func (m *memory) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.order.Len()
}

// childKey names a child in a memory: its cluster (the address of c's REST
// mapper: one per cluster, see [identity.Cluster]; an address reused by a
// later mapper cannot fool a memory, whose entries also hold the child's
// UID), group, version, kind, namespace and name. Same-named children of
// several clusters have entries of their own and do not evict each other.
func childKey(c client.Client, gvk schema.GroupVersionKind, obj client.Object) string {
	var mapper uintptr // a REST mapper that is no pointer is no cluster's: all such share 0
	if v := reflect.ValueOf(c.RESTMapper()); v.Kind() == reflect.Pointer {
		mapper = v.Pointer()
	}
	return strconv.FormatUint(uint64(mapper), 16) + "|" + gvk.String() + "|" + obj.GetNamespace() + "|" + obj.GetName()
}

// sum is a digest of parts, each encoded as JSON (map keys sorted, so
// that equal content has equal sums).
func sum(parts ...any) ([sha256.Size]byte, error) {
	h := sha256.New()
	for _, p := range parts {
		b, err := object.MarshalJSON(p)
		if err != nil {
			return [sha256.Size]byte{}, err
		}
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out, nil
}

// verdicts remembers, per child and call, that a write found only the
// API server's defaults between the live child (its UID and
// resourceVersion) and the desired one (a sum of it): the same question is
// not asked again until either changes.
var verdicts = newMemory(memorySize)

// The prefixes of the verdicts' keys, per call.
const (
	updateVerdicts = "update|"
	patchVerdicts  = "patch|"
)

// remembered reports whether a verdict is remembered for key, whatever
// the child has become since.
func remembered(key string) bool {
	_, ok := verdicts.get(key)
	return ok
}

// onlyDefaults reports whether a write found only defaults to differ
// between live, as it is, and the desired object whose sum is s.
func onlyDefaults(key string, live client.Object, s [sha256.Size]byte) bool {
	m, ok := verdicts.get(key)
	return ok && m.sum == s && m.holds(live)
}

// rememberedAt returns the sum of the desired object of the verdict
// remembered for key that still holds for live (see [memo.holds]), and
// whether there is one.
func rememberedAt(key string, live client.Object) (memo, bool) {
	m, ok := verdicts.get(key)
	return m, ok && m.holds(live)
}

// rememberOnlyDefaults remembers that a write found only defaults to
// differ between live and the desired object whose sum is s; or, for a
// child just created from that desired object, live being the API
// server's answer, that what differs is what the server filled in.
func rememberOnlyDefaults(key string, live client.Object, s [sha256.Size]byte) {
	rememberVerdict(key, live, memo{sum: s})
}

// rememberStatusSent is [rememberOnlyDefaults] for an update that carried
// the desired status whose sum is status and stored nothing: the verdict
// holds for that desired status whatever the live one (which such an
// update cannot change: see updateChild).
func rememberStatusSent(key string, live client.Object, s, status [sha256.Size]byte) {
	rememberVerdict(key, live, memo{sum: s, status: status, statusSent: true})
}

// rememberWritten remembers that this process wrote live (created it, and
// the answer held nothing the server filled in): no verdict, whose sum no
// desired object has, but a mark that a client which does not show the
// child is behind our own write (see writeCall.ownWriteUnseen).
func rememberWritten(key string, live client.Object) {
	rememberVerdict(key, live, memo{})
}

// rememberVerdict remembers m, a verdict, on live as it is.
func rememberVerdict(key string, live client.Object, m memo) {
	if live.GetUID() == "" || live.GetResourceVersion() == "" {
		return
	}
	m.uid, m.rv, m.gen, m.meta = live.GetUID(), live.GetResourceVersion(), live.GetGeneration(), metaDigest(live)
	verdicts.put(key, m)
}

// answeredBefore reports whether obj, as the API server just answered a
// patch, is the object (UID and resourceVersion) an earlier answer to a
// patch of key showed: nothing was stored since, so the patch stored
// nothing either.
func answeredBefore(key string, obj client.Object) bool {
	m, ok := verdicts.get(key)
	return ok && m.uid == obj.GetUID() && m.rv == obj.GetResourceVersion()
}

// rememberAnswer remembers obj's UID and resourceVersion as the API server
// answered a patch of key.
func rememberAnswer(key string, obj client.Object) {
	if obj.GetUID() == "" || obj.GetResourceVersion() == "" {
		return
	}
	verdicts.put(key, memo{uid: obj.GetUID(), rv: obj.GetResourceVersion()})
}

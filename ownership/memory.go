package ownership

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"hash/maphash"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/scope"
)

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
// (A kind whose generation does not follow its changes, a PriorityClass,
// is remembered without one: see frozenGeneration.)
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

// memKey names what is remembered of a child: the State of its cluster
// (see [scope.Of]; nil: nothing is remembered), the child, and the call's
// slot there (CreateOrUpdate's verdicts, Apply's answers). Each State is its cluster's and
// what it remembers of a child ends when the cluster's informer shows the
// child deleted: nothing is bounded by a count, and nothing is shared
// between two managers or two clusters.
type memKey struct {
	s    *scope.State
	obj  scope.Key
	slot string
}

// ok reports whether there is a State to remember in.
func (k memKey) ok() bool { return k.s != nil }

// childKey is the memKey of obj, of kind gvk, in the State of c's cluster.
func childKey(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, obj client.Object, slot string) memKey {
	return memKey{s: scope.Of(ctx, c), obj: scope.Key{GVK: gvk, Namespace: obj.GetNamespace(), Name: obj.GetName()}, slot: slot}
}

// recall returns what is remembered at k.
func recall(k memKey) (memo, bool) {
	v, ok := k.s.Recall(k.obj, k.slot)
	if !ok {
		return memo{}, false
	}
	m, ok := v.(memo)
	return m, ok
}

// keep remembers m at k; obj is the child (its type tells the informer
// that prunes the entry).
func keep(k memKey, obj client.Object, m memo) {
	k.s.Remember(k.obj, obj, k.slot, m)
}

// drop forgets what is remembered at k.
func drop(k memKey) { k.s.Forget(k.obj, k.slot) }

// sum is a digest of parts, each encoded as JSON (map keys sorted, so
// that equal content has equal sums).
func sum(parts ...any) ([sha256.Size]byte, error) {
	h := sha256.New()
	for _, p := range parts {
		b, err := json.Marshal(p)
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

// The verdicts: per child and call, that a write found only the API
// server's defaults between the live child (see [memo.holds]) and the
// desired one (a sum of it): the same question is not asked again until
// either changes.
// The slot of CreateOrUpdate's verdicts.
const updateVerdicts = "update"

// remembered reports whether a verdict is remembered for key, whatever
// the child has become since.
func remembered(key memKey) bool {
	_, ok := recall(key)
	return ok
}

// rememberOnlyDefaults remembers that a write found only defaults to
// differ between live and the desired object whose sum is s; or, for a
// child just created from that desired object, live being the API
// server's answer, that what differs is what the server filled in.
func rememberOnlyDefaults(key memKey, live client.Object, s [sha256.Size]byte) {
	rememberVerdict(key, live, memo{sum: s})
}

// rememberStatusSent is [rememberOnlyDefaults] for an update that carried
// the desired status whose sum is status and stored nothing: the verdict
// holds for that desired status whatever the live one (which such an
// update cannot change: see updateChild).
func rememberStatusSent(key memKey, live client.Object, s, status [sha256.Size]byte) {
	rememberVerdict(key, live, memo{sum: s, status: status, statusSent: true})
}

// rememberWritten remembers that this process wrote live (created it, and
// the answer held nothing the server filled in): no verdict, whose sum no
// desired object has, but a mark that a client which does not show the
// child is behind our own write (see writeCall.ownWriteUnseen).
func rememberWritten(key memKey, live client.Object) {
	rememberVerdict(key, live, memo{})
}

// rememberVerdict remembers m, a verdict, on live as it is. Of a kind
// whose generation does not follow its changes (see frozenGeneration) the
// generation is not remembered: the verdict then holds at the
// resourceVersion alone.
func rememberVerdict(key memKey, live client.Object, m memo) {
	if live.GetUID() == "" || live.GetResourceVersion() == "" {
		return
	}
	m.uid, m.rv, m.gen, m.meta = live.GetUID(), live.GetResourceVersion(), live.GetGeneration(), metaDigest(live)
	if frozenGeneration(key.obj.GVK.GroupKind()) {
		m.gen = 0
	}
	keep(key, live, m)
}

// frozenGeneration reports whether gk's API sets metadata.generation and
// never bumps it: a change of its fields by another writer leaves it as it
// was (a PriorityClass's description, globalDefault). Of the built-in
// kinds of Kubernetes 1.36, only PriorityClass.
func frozenGeneration(gk schema.GroupKind) bool {
	return gk == schema.GroupKind{Group: "scheduling.k8s.io", Kind: "PriorityClass"}
}

package scope

import (
	"container/heap"
	"context"
	"reflect"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	clientfeatures "k8s.io/client-go/features"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The ledger: the resourceVersion of this process's last write of each
// object, until the informer shows the object deleted (or replaced by
// another of the name); in a State without informers (reconcile.For's
// own), until a read of For shows the write, or finds the object gone.
// A read older than the entry is a copy that does not hold our own write:
// a cache behind, or a snapshot read before the write and held across it
// (which is why the informer showing the write does not end the entry).
// Reconciling from it would compute from the past. There is no count or
// time bound that forgets a write early: the entries are at most the
// objects this process wrote that the informer holds.

// RecordWrite remembers that this process wrote obj, the API server's
// answer, at its resourceVersion; k names it.
func (s *State) RecordWrite(k Key, obj client.Object) {
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	if s == nil || uid == "" || rv == "" {
		return
	}
	if s.informers != nil && !s.hook(k.GVK, obj) {
		return // nothing would end the entry (a metadata-only object)
	}
	s.mu.Lock()
	e := s.objects[k]
	switch {
	case e == nil:
		e = &entry{}
		s.objects[k] = e
	case e.uid == uid && e.rv != "" && OlderRV(rv, e.rv):
		s.mu.Unlock()
		return // an answer that arrived after a newer one
	}
	e.uid, e.rv = uid, rv
	s.track(k, obj)
	s.mu.Unlock()
}

// written is a write of an object: its UID and resourceVersion.
type written struct {
	uid types.UID
	rv  string
}

// look is where to look up an object a hooked informer holds: its store
// (client-go's shared informer, which controller-runtime's cache hands
// out), or, for an informer that does not expose one (the multi-namespace
// cache's, one informer per namespace, each with its own watch), the
// cache read as a client (the store of the object's namespace).
type look struct {
	store  toolscache.Store
	reader client.Reader
}

// seenKey names what [State.saw] notes: an informer's, in one namespace
// where it is one informer per namespace (each watch is ordered by
// resourceVersion, not several together), else in all ("").
type seenKey struct {
	hk        hookKey
	namespace string
}

// seenKeyOf is the seenKey of an object of namespace ns of the informer
// hk names. s.mu is held.
func (s *State) seenKeyOf(hk hookKey, ns string) seenKey {
	if s.looks[hk].store != nil {
		ns = ""
	}
	return seenKey{hk: hk, namespace: ns}
}

// seenOf is the newest resourceVersion noted of sk (see [State.saw]), ""
// for none. s.mu is held.
func (s *State) seenOf(sk seenKey) string {
	if sk.namespace == "" {
		return s.seen[sk]
	}
	if rv, ok := s.seenNS[sk]; ok {
		return rv
	}
	rv, ok := s.seenNSOld[sk]
	if ok {
		s.note(sk, rv)
	}
	return rv
}

// seenNSBound is how many namespaces' notes the newer generation holds
// before it becomes the older one (whose notes, unless read or noted
// again, are then dropped): what is noted per namespace is bounded by the
// namespaces active lately, not by every namespace an informer of all of
// them ever showed. A note dropped costs nothing an event would not give
// back: each event notes its own resourceVersion, the newest of its
// namespace; only a write recorded after the last event of a namespace
// quiet since waits for the next one.
const seenNSBound = 1024

// note notes rv as the newest resourceVersion of sk. s.mu is held.
func (s *State) note(sk seenKey, rv string) {
	if sk.namespace == "" {
		s.seen[sk] = rv
		return
	}
	delete(s.seenNSOld, sk)
	s.seenNS[sk] = rv
	if len(s.seenNS) >= seenNSBound {
		s.seenNSOld, s.seenNS = s.seenNS, make(map[seenKey]string, seenNSBound)
	}
}

// track makes sure what was just remembered of the object k, at obj (the
// answer to a write of it), ends although the informer may never show
// obj's deletion: the deletion's watch event can beat the write's answer
// (the write itself deleted the object, removing its last finalizer; or
// someone else deleted it right after), or the object is out of the
// informer's sight (its label selector), and the informer tells nothing
// of it, ever. Where the informer has shown obj's resourceVersion or
// later already, it is settled now (see [State.gone]); else at the first
// event past it. s.mu is held.
func (s *State) track(k Key, obj client.Object) {
	hk := hookKey{gvk: k.GVK, typ: reflect.TypeOf(obj)}
	w := written{uid: obj.GetUID(), rv: obj.GetResourceVersion()}
	if l := s.looks[hk]; l.store == nil && l.reader == nil || w.uid == "" || w.rv == "" {
		return // nowhere to look, or no write to tell
	}
	if seen := s.seenOf(s.seenKeyOf(hk, k.Namespace)); seen != "" && !OlderRV(seen, w.rv) {
		gone, sure := s.gone(hk, k, w)
		if gone {
			s.end(k, w)
		}
		if sure {
			return
		}
		// A read that failed tells nothing: settled at a later event.
	}
	sk := s.seenKeyOf(hk, k.Namespace)
	p := s.unshown[sk]
	if p == nil {
		p = &pending{byKey: map[Key]written{}}
		s.unshown[sk] = p
	}
	p.byKey[k] = w
	heap.Push(&p.order, pendingWrite{k: k, w: w, at: rvOrder(w.rv)})
	if len(p.order) > 2*len(p.byKey)+32 {
		// Mostly writes replaced since (an object written again and
		// again that no event settles): the last of each only.
		p.order = p.order[:0]
		for k, w := range p.byKey {
			p.order = append(p.order, pendingWrite{k: k, w: w, at: rvOrder(w.rv)})
		}
		heap.Init(&p.order)
	}
}

// pending are the writes an informer (in a namespace, where it is one per
// namespace: see [seenKey]) has not shown yet, to settle at the first
// event past each: the last write of each object, and the writes in order
// of resourceVersion (a heap, in which a write since replaced by a later
// one of its object is left to be skipped), so that an event looks only
// at the writes it has gone past.
type pending struct {
	byKey map[Key]written
	order pendingOrder
}

type pendingWrite struct {
	k  Key
	w  written
	at uint64 // w.rv as a number; 0 where it is not one (settled first)
}

// rvOrder is rv as a number, for ordering; 0 where it is not one.
func rvOrder(rv string) uint64 {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

type pendingOrder []pendingWrite

func (o pendingOrder) Len() int           { return len(o) }
func (o pendingOrder) Less(i, j int) bool { return o[i].at < o[j].at }
func (o pendingOrder) Swap(i, j int)      { o[i], o[j] = o[j], o[i] }
func (o *pendingOrder) Push(x any)        { *o = append(*o, x.(pendingWrite)) }
func (o *pendingOrder) Pop() any {
	old := *o
	x := old[len(old)-1]
	old[len(old)-1] = pendingWrite{}
	*o = old[:len(old)-1]
	return x
}

// gone reports whether the store of hk's informer, which has shown w's
// resourceVersion or later, holds neither w's object (its UID) nor
// anything older of the name: the object is gone from it (deleted, or
// out of its sight), and its deletion's event, if any, came already or is
// on its way (the store is updated before the handlers are told). A read
// of the cache shows nothing older than w then. That holds where the
// store is updated as a whole, a list at once (client-go's AtomicFIFO, on
// by default since 1.36), and a store tells how far it has gone
// (LastStoreSyncResourceVersion); with AtomicFIFO off, nothing is gone
// here. sure is false where the
// look-up failed (a multi-namespace cache's informer not synced yet): it
// tells nothing, and w is to be settled again. s.mu is held.
func (s *State) gone(hk hookKey, k Key, w written) (gone, sure bool) {
	var held metav1.Object
	if !clientfeatures.FeatureGates().Enabled(clientfeatures.AtomicFIFO) {
		// client-go applies a list to the store batch by batch (1000
		// objects), in key order: an event of an early object, newer
		// than w, can come before the store holds w's object, later in
		// the list. Only the deletion's event tells then.
		return false, true
	}
	switch l := s.looks[hk]; {
	case l.store != nil:
		if rv := l.store.LastStoreSyncResourceVersion(); rv == "" || OlderRV(rv, w.rv) {
			// The store says it has not gone past w (the events noted
			// say so only where they come in resourceVersion order).
			return false, rv == ""
		}
		key := k.Name
		if k.Namespace != "" {
			key = k.Namespace + "/" + k.Name
		}
		item, exists, err := l.store.GetByKey(key)
		if err != nil {
			return false, false
		}
		if !exists {
			return true, true
		}
		if held, err = meta.Accessor(item); err != nil {
			return false, false
		}
	case l.reader != nil:
		obj, ok := reflect.New(hk.typ.Elem()).Interface().(client.Object)
		if !ok {
			return false, true // nowhere to look: never
		}
		if u, ok := obj.(*unstructured.Unstructured); ok {
			u.SetGroupVersionKind(hk.gvk)
		}
		// s.mu is held: the read must not wait for an informer to sync
		// (a cache read waits until its context ends), so its context has
		// ended already; an informer not synced yet answers an error, and
		// the entry stays.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := l.reader.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, obj)
		if apierrors.IsNotFound(err) {
			return true, true
		}
		if err != nil {
			return false, false
		}
		held = obj
	default:
		return false, true
	}
	return held.GetUID() != w.uid && !OlderRV(held.GetResourceVersion(), w.rv), true
}

// end drops what is remembered of the object k, written at w, which its
// informer does not hold: the ledger's entry of that write and the memos.
// s.mu is held.
func (s *State) end(k Key, w written) {
	e, ok := s.objects[k]
	if !ok {
		return
	}
	if e.uid == w.uid {
		e.uid, e.rv = "", ""
	}
	e.memos = nil
	s.dropIfEmpty(k, e)
}

// saw notes the resourceVersion of o, an event's object of the informer
// hk names, and settles the writes its informer has now gone past (see
// [State.track]), before the event's handler runs.
func (s *State) saw(hk hookKey, o any) {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return
	}
	rv := m.GetResourceVersion()
	s.mu.Lock()
	defer s.mu.Unlock()
	sk := s.seenKeyOf(hk, m.GetNamespace())
	seen := s.seenOf(sk)
	if seen == "" || OlderRV(seen, rv) {
		seen = rv
		s.note(sk, rv)
	}
	p := s.unshown[sk]
	if p == nil {
		return
	}
	var again []pendingWrite
	for p.order.Len() > 0 && !OlderRV(seen, p.order[0].w.rv) {
		x := heap.Pop(&p.order).(pendingWrite)
		if cur, ok := p.byKey[x.k]; !ok || cur != x.w {
			continue // replaced by a later write of the object
		}
		gone, sure := s.gone(hk, x.k, x.w)
		if !sure {
			again = append(again, x) // a read that failed tells nothing: at a later event
			continue
		}
		delete(p.byKey, x.k)
		if gone {
			s.end(x.k, x.w)
		}
	}
	for _, x := range again {
		heap.Push(&p.order, x)
	}
	if len(p.byKey) == 0 {
		delete(s.unshown, sk)
	}
}

// OwnWriteAhead reports whether this process wrote obj (the object k
// names, by UID) at a resourceVersion newer than obj's, and that
// resourceVersion: obj was then read from a cache that does not hold our
// own write yet. Where the informer ends entries, a read that shows the
// write does not: it may come from the API server while the cache is still
// behind. A State without informers (reconcile.For's own, which only its
// reads through its client ask) ends the entry on such a read.
func (s *State) OwnWriteAhead(k Key, obj client.Object) (string, bool) {
	if s == nil {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.objects[k]
	if !ok || e.rv == "" || e.uid != obj.GetUID() {
		return "", false
	}
	if OlderRV(obj.GetResourceVersion(), e.rv) {
		return e.rv, true
	}
	if s.informers == nil {
		// reconcile.For's own State: only its reads, through its client,
		// ask, and one that shows the write ends the entry.
		e.uid, e.rv = "", ""
		s.dropIfEmpty(k, e)
	}
	return "", false
}

// ForgetWrite drops the ledger's entry for k: obj, read from the API server
// itself (not a cache), is older than it, so the entry is wrong (the store
// was restored from a backup, say), and it would otherwise make every read
// of the object look stale; or obj is nil: the object is gone (in a State
// without informers only; one with them ends the entry when its informer
// shows that object, by UID, deleted: a cache that answers not found may
// not show a recreated object yet).
func (s *State) ForgetWrite(k Key, obj client.Object) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.objects[k]
	if !ok || e.rv == "" || obj == nil && s.informers != nil {
		return // gone: where the informer shows deletions, it ends the entry by UID
	}
	if obj == nil || e.uid != obj.GetUID() || OlderRV(obj.GetResourceVersion(), e.rv) {
		e.uid, e.rv = "", ""
		s.dropIfEmpty(k, e)
	}
}

// OlderRV reports whether resourceVersion a is older than b (both from one
// API server: they compare as numbers).
func OlderRV(a, b string) bool {
	c, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && c < 0
}

// hook registers, once per kind and Go type, an event handler on the
// informer of obj's kind in s's cache, which drops the entries of objects
// it shows deleted and the ledger's entries of writes it shows, and reports
// whether there is one:
// the informer of its class is the one the manager's client reads it
// through, which that read started already. An unstructured object's
// informer is started here if the client does not read the kind through
// the cache already (a manager's client reads unstructured objects from
// the API server by default): one LIST and WATCH of the kind, which is what
// ends the entries. A metadata-only object is not hooked (its informer
// does not see what the write changed). Without a cache, or where it
// refuses, nothing is hooked.
func (s *State) hook(gvk schema.GroupVersionKind, obj client.Object) bool {
	if s == nil || s.informers == nil {
		return false
	}
	if _, ok := obj.(*metav1.PartialObjectMetadata); ok {
		return false
	}
	hk := hookKey{gvk: gvk, typ: reflect.TypeOf(obj)}
	s.mu.Lock()
	done, tried := s.hooked[hk]
	s.mu.Unlock()
	if tried {
		return done
	}
	// One hook at a time (a kind's first entry, rare), asked of the
	// informers once: a refusal is not asked again.
	s.hookMu.Lock()
	defer s.hookMu.Unlock()
	s.mu.Lock()
	done, tried = s.hooked[hk]
	s.mu.Unlock()
	if tried {
		return done
	}
	inf, err := s.informers.GetInformer(context.Background(), obj, cache.BlockUntilSynced(false))
	if err == nil {
		// Where to look is known before the first event, which may come
		// before AddEventHandler returns (the store's objects, replayed
		// to the handler's goroutine): [State.saw] notes it by it. An
		// informer with a store (client-go's) is looked up in it; one
		// whose store is nil (a fake's) nowhere; one without a store (the
		// multi-namespace cache's) through the cache.
		var l look
		if st, ok := inf.(interface{ GetStore() toolscache.Store }); ok {
			l = look{store: st.GetStore()}
		} else if r, ok := s.informers.(client.Reader); ok {
			l = look{reader: r}
		}
		s.mu.Lock()
		s.looks[hk] = l
		s.mu.Unlock()
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { s.saw(hk, o); s.shown(gvk, o) },
			UpdateFunc: func(_, o any) { s.saw(hk, o); s.shown(gvk, o) },
			DeleteFunc: func(o any) { s.saw(hk, o); s.deleted(gvk, o) },
		})
	}
	s.mu.Lock()
	s.hooked[hk] = err == nil
	if err != nil {
		delete(s.looks, hk)
	}
	s.mu.Unlock()
	return err == nil
}

// shown ends the ledger's entry of o when the informer shows another
// object under the name, no older than the write recorded: the object
// written was replaced since. The informer showing the write itself, or a
// later one, ends nothing: a copy read before our write (a Patcher's
// snapshot held across it) is older than it however far the cache has
// moved, and must still be refused. The entry ends with the object
// (deleted), so the ledger holds at most one entry per object the
// informer holds. An older event, of the object or of one it replaced,
// ends nothing.
func (s *State) shown(gvk schema.GroupVersionKind, o any) {
	k, m, ok := eventKey(gvk, o)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.objects[k]; ok && e.rv != "" && e.uid != m.GetUID() && !OlderRV(m.GetResourceVersion(), e.rv) {
		e.uid, e.rv = "", ""
		s.dropIfEmpty(k, e)
	}
}

// deleted drops everything remembered of o, which its informer shows
// deleted.
func (s *State) deleted(gvk schema.GroupVersionKind, o any) {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	k, m, ok := eventKey(gvk, o)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.objects[k]
	switch {
	case !ok:
	case e.rv != "" && e.uid != m.GetUID():
		// A late event of an earlier object of that name: our write of
		// the one that replaced it stays in the ledger.
		e.memos = nil
	default:
		delete(s.objects, k)
	}
}

// eventKey is the Key, of kind gvk, of o, an informer's object.
func eventKey(gvk schema.GroupVersionKind, o any) (Key, metav1.Object, bool) {
	m, err := meta.Accessor(o)
	if err != nil {
		return Key{}, nil, false
	}
	return Key{GVK: gvk, Namespace: m.GetNamespace(), Name: m.GetName()}, m, true
}

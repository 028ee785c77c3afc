// Package scope holds what steady remembers of one cluster: the
// resourceVersions of this process's own writes (the ledger that lets a
// reconcile read its own writes), ownership's verdicts on children, and
// what was learned of the cluster's kinds. A [State] is made by the user's
// one call (steady.NewClient, reconcile.NewController) or by a
// reconcile.For given a client that carries none, and belongs to it:
// nothing here is package-level, so two managers, two clusters of a fleet
// or two tests of one binary share nothing.
//
// What a State remembers of an object is bounded by what the cluster's
// informers hold: an entry is dropped when the informer of its kind shows
// the object deleted, the ledger's entry of a write too (or when it shows
// the object replaced by another of the name), or, where the informer has
// gone past the write without holding the object (its deletion's event
// came before the write's answer was recorded, or the object is out of
// its sight: a label selector), at the first event past it. A State made
// without
// informers (reconcile.For's own, for a client that carries none) keeps
// only the ledger, whose entries its reads end (For reads every object it
// reconciles, and a deleted one as not found), and remembers no callers'
// memos.
package scope

import (
	"context"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/steadyk8s/steady/internal/identity"
)

// State is what steady remembers of one cluster. The nil *State remembers
// nothing: every method is safe on it.
type State struct {
	cluster   identity.Key
	apiReader client.Reader
	informers cache.Informers

	mu      sync.Mutex
	objects map[Key]*entry
	// hooked holds the informers (a kind, typed or not) whose events
	// prune objects; hookMu makes one hook at a time.
	hooked map[hookKey]bool
	hookMu sync.Mutex
	// looks say where to look up an object a hooked informer holds, and
	// seen is the newest resourceVersion each informer's events carried to
	// the hook; seenNS, in two generations (see [seenNSBound]), the same
	// per namespace, where it is one informer per namespace: see
	// [State.track].
	looks             map[hookKey]look
	seen              map[seenKey]string
	seenNS, seenNSOld map[seenKey]string
	// unshown holds, per informer (and namespace, as seen), the objects
	// remembered at a write the informer had not shown yet (the
	// resourceVersion of the write): the first event past it settles each
	// (see [State.track]).
	unshown map[seenKey]*pending

	kinds sync.Map // kindFact -> bool
}

// Key names an object of the cluster.
type Key struct {
	GVK             schema.GroupVersionKind
	Namespace, Name string
}

// entry is what is remembered of one object.
type entry struct {
	// uid and rv are the object and resourceVersion of this process's last
	// write, rv "" once a read or the informer showed it.
	uid types.UID
	rv  string
	// memos are the callers' memories of the object, by slot.
	memos map[string]any
}

type hookKey struct {
	gvk schema.GroupVersionKind
	typ reflect.Type // the object's Go type
}

// New returns the State of c's cluster. apiReader reads from the API
// server (may be nil); informers, when not nil, is the cache whose
// informers prune what the State remembers.
func New(c client.Client, apiReader client.Reader, informers cache.Informers) *State {
	return &State{
		cluster:   identity.Cluster(c),
		apiReader: apiReader,
		informers: informers,
		objects:   map[Key]*entry{},
		hooked:    map[hookKey]bool{},
		looks:     map[hookKey]look{},
		seen:      map[seenKey]string{},
		seenNS:    map[seenKey]string{},
		unshown:   map[seenKey]*pending{},
	}
}

// APIReader is the reader the State was made with, or nil.
func (s *State) APIReader() client.Reader {
	if s == nil {
		return nil
	}
	return s.apiReader
}

// Len is the number of objects the State remembers anything of.
func (s *State) Len() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.objects)
}

// Memos is the number of memos the State holds: one per object and slot
// a caller remembers something in (see [State.Remember]).
func (s *State) Memos() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.objects {
		n += len(e.memos)
	}
	return n
}

// Unshown is the number of writes the State waits for an informer event
// past, to settle (see [State.track]): at most one per object remembered,
// none once the informers have gone past every write.
func (s *State) Unshown() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.unshown {
		n += len(p.byKey)
	}
	return n
}

// carrier is a client that carries a State: the one [Wrap] returns.
type carrier struct {
	client.Client
	s *State
}

// Wrap returns c carrying s.
func Wrap(c client.Client, s *State) client.Client {
	if h, ok := c.(*carrier); ok {
		c = h.Client
	}
	return &carrier{Client: c, s: s}
}

// Held returns the State c carries, or nil.
func Held(c client.Client) *State {
	if h, ok := c.(*carrier); ok {
		return h.s
	}
	return nil
}

type ctxKey struct{}

// Into returns ctx carrying s (ctx itself for a nil s, or one that
// carries s already).
func Into(ctx context.Context, s *State) context.Context {
	if s == nil || ctx.Value(ctxKey{}) == s {
		return ctx
	}
	return context.WithValue(ctx, ctxKey{}, s)
}

// Carry returns ctx carrying the State of c's cluster (see [Of]), for
// calls made with a wrapper of c (one that counts requests, say).
func Carry(ctx context.Context, c client.Client) context.Context {
	return Into(ctx, Held(c))
}

// Of returns the State of c's cluster: the one c carries, else the one ctx
// carries if it is of c's cluster (a client of that cluster, wrapped or
// not: see [identity.Cluster]), else nil.
func Of(ctx context.Context, c client.Client) *State {
	if s := Held(c); s != nil {
		return s
	}
	s, ok := ctx.Value(ctxKey{}).(*State)
	if !ok || c == nil || s.cluster == (identity.Key{}) || identity.Cluster(c) != s.cluster {
		return nil
	}
	return s
}

// Recall returns what slot remembers of the object k.
func (s *State) Recall(k Key, slot string) (any, bool) {
	if s == nil {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.objects[k]
	if !ok {
		return nil, false
	}
	v, ok := e.memos[slot]
	return v, ok
}

// Remember remembers v in slot for the object k, whose current form is obj
// (its type tells the informer that prunes the entry; its UID and
// resourceVersion, where set, that the informer has not shown it gone
// before: see [State.shownGone]). Where no informer
// ends the entry (a State without informers, an object that is not of a
// Go type: see [State.hook]) it remembers nothing: nothing would end the
// entry of an object deleted by someone else.
func (s *State) Remember(k Key, obj client.Object, slot string, v any) {
	if s == nil || !s.hook(k.GVK, obj) {
		return // nothing would end the entry
	}
	s.mu.Lock()
	e := s.objects[k]
	if e == nil {
		e = &entry{}
		s.objects[k] = e
	}
	if e.memos == nil {
		e.memos = map[string]any{}
	}
	e.memos[slot] = v
	s.track(k, obj)
	s.mu.Unlock()
}

// Forget forgets what slot remembers of the object k.
func (s *State) Forget(k Key, slot string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.objects[k]; ok {
		delete(e.memos, slot)
		s.dropIfEmpty(k, e)
	}
}

// dropIfEmpty drops e, k's entry, if it holds nothing. The caller holds
// the lock.
func (s *State) dropIfEmpty(k Key, e *entry) {
	if e.rv == "" && len(e.memos) == 0 {
		delete(s.objects, k)
	}
}

// Learned returns what was learned of fact for gvk (see [State.Learn]).
func (s *State) Learned(gvk schema.GroupVersionKind, fact string) (v, known bool) {
	if s == nil {
		return false, false
	}
	x, ok := s.kinds.Load(kindFact{gvk, fact})
	if !ok {
		return false, false
	}
	return x.(bool), true
}

// Learn records that fact holds (v) or not for the kind gvk in this
// cluster: whether it has a status subresource, say.
func (s *State) Learn(gvk schema.GroupVersionKind, fact string, v bool) {
	if s != nil {
		s.kinds.Store(kindFact{gvk, fact}, v)
	}
}

// FactStatusSubresource is the fact of a kind that has a status subresource
// (true) or none (false) in the State's cluster: ownership learns it from
// its updates, the Patcher from its status writes.
const FactStatusSubresource = "status subresource"

type kindFact struct {
	gvk  schema.GroupVersionKind
	fact string
}

// KeyOf is obj's Key, its kind told by scheme where obj does not carry it.
func KeyOf(obj client.Object, scheme *runtime.Scheme) (Key, bool) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		var err error
		if gvk, err = apiutil.GVKForObject(obj, scheme); err != nil {
			return Key{}, false
		}
	}
	return Key{GVK: gvk, Namespace: obj.GetNamespace(), Name: obj.GetName()}, true
}

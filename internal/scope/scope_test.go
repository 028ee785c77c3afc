package scope

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

var cmGVK = corev1.SchemeGroupVersion.WithKind("ConfigMap")

func cm(name, uid, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid), ResourceVersion: rv}}
}

func key(name string) Key { return Key{GVK: cmGVK, Namespace: "ns", Name: name} }

// newState is a State with fake informers, and the ConfigMap informer
// those hold (whose events the test sends).
func newState(t *testing.T) (*State, *informertest.FakeInformers) {
	t.Helper()
	inf := &informertest.FakeInformers{Scheme: scheme.Scheme}
	c := fake.NewClientBuilder().Build()
	return New(c, nil, inf), inf
}

func TestLedger(t *testing.T) {
	s, _ := newState(t)
	s.RecordWrite(key("l"), cm("l", "u1", "10"))
	for _, tc := range []struct {
		rv     string
		behind bool
	}{{"9", true}, {"10", false}, {"11", false}} {
		if got, behind := s.OwnWriteAhead(key("l"), cm("l", "u1", tc.rv)); behind != tc.behind || behind && got != "10" {
			t.Errorf("read at %s: (%s, %v), want behind %v (of 10)", tc.rv, got, behind, tc.behind)
		}
	}
	if _, behind := s.OwnWriteAhead(key("other"), cm("other", "u2", "1")); behind {
		t.Error("an object never written is behind")
	}
	if _, behind := s.OwnWriteAhead(key("l"), cm("l", "another-uid", "1")); behind {
		t.Error("another object of that name (another UID) is behind")
	}
	s.RecordWrite(key("l"), cm("l", "u1", "8")) // an answer that arrived after a newer one
	if got, _ := s.OwnWriteAhead(key("l"), cm("l", "u1", "9")); got != "10" {
		t.Errorf("an older answer replaced the newer: %s", got)
	}
	s.ForgetWrite(key("l"), cm("l", "u1", "12")) // newer than the entry: nothing to forget
	if _, behind := s.OwnWriteAhead(key("l"), cm("l", "u1", "9")); !behind {
		t.Error("forgotten by a newer read")
	}
	s.ForgetWrite(key("l"), cm("l", "u1", "5")) // the API server answers older: the entry is wrong
	if _, behind := s.OwnWriteAhead(key("l"), cm("l", "u1", "5")); behind {
		t.Error("not forgotten by an older answer of the API server")
	}
	// Gone, as a cache answers not found: the informer ends the entry
	// when it shows the deletion (by UID), not the read (the cache may not
	// show a recreated object yet).
	s.RecordWrite(key("g"), cm("g", "u3", "20"))
	s.ForgetWrite(key("g"), nil)
	if _, behind := s.OwnWriteAhead(key("g"), cm("g", "u3", "1")); !behind {
		t.Error("a not-found read ended the entry where the informer ends it")
	}
	s.deleted(cmGVK, cm("g", "u3", "21"))
	if s.Len() != 0 {
		t.Errorf("a deleted object's entry kept (%d entries)", s.Len())
	}
	// A UID without a resourceVersion, or none at all, is not recorded.
	s.RecordWrite(key("x"), cm("x", "", "3"))
	s.RecordWrite(key("y"), cm("y", "u4", ""))
	if s.Len() != 0 {
		t.Errorf("%d entries recorded without a UID or resourceVersion", s.Len())
	}
	// The nil State records nothing and finds nothing behind.
	var none *State
	none.RecordWrite(key("l"), cm("l", "u1", "10"))
	if _, behind := none.OwnWriteAhead(key("l"), cm("l", "u1", "1")); behind || none.Len() != 0 {
		t.Error("the nil State remembers")
	}
}

// TestLedgerForgetsNoUnseenWrite: the ledger forgets a write when the
// informer shows the object gone (deleted, or replaced by another of the
// name), never because of how many other writes came after (the old
// ledger dropped the older half beyond 65,536 entries, and then let a
// stale copy overwrite our newer write), nor because the cache has shown
// the write: a copy read before it is still older. Here 100,000 writes are
// all still known after the informer showed them and later ones; the
// informer showing them deleted empties the ledger.
func TestLedgerForgetsNoUnseenWrite(t *testing.T) {
	s, inf := newState(t)
	const n = 100_000
	for i := range n {
		name := fmt.Sprint("w-", i)
		s.RecordWrite(key(name), cm(name, "u-"+name, "7"))
	}
	for _, i := range []int{0, 1, n / 2, n - 1} {
		name := fmt.Sprint("w-", i)
		if _, behind := s.OwnWriteAhead(key(name), cm(name, "u-"+name, "6")); !behind {
			t.Fatalf("write %d of %d forgotten before the informer showed it", i, n)
		}
	}
	fi, err := inf.FakeInformerFor(context.Background(), &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	// An event older than the write ends nothing; one that shows it does.
	fi.Update(cm("w-0", "u-w-0", "5"), cm("w-0", "u-w-0", "6"))
	if _, behind := s.OwnWriteAhead(key("w-0"), cm("w-0", "u-w-0", "6")); !behind {
		t.Fatal("an event older than the write ended its entry")
	}
	for i := range n {
		name := fmt.Sprint("w-", i)
		if i%2 == 0 {
			fi.Update(cm(name, "u-"+name, "6"), cm(name, "u-"+name, "7"))
		} else {
			fi.Add(cm(name, "u-"+name, "9")) // a later write, someone else's
		}
	}
	// Shown, and moved on: a copy read before the write is still behind it.
	for _, i := range []int{0, 1, n - 1} {
		name := fmt.Sprint("w-", i)
		if _, behind := s.OwnWriteAhead(key(name), cm(name, "u-"+name, "6")); !behind {
			t.Fatalf("write %d forgotten once the informer showed it: a snapshot read before it would overwrite it", i)
		}
		if _, behind := s.OwnWriteAhead(key(name), cm(name, "u-"+name, "9")); behind {
			t.Fatalf("write %d: a copy no older than the write taken for stale", i)
		}
	}
	if s.Len() != n {
		t.Errorf("%d entries after the informer showed the writes, want %d (one per object it holds)", s.Len(), n)
	}
	for i := range n {
		name := fmt.Sprint("w-", i)
		fi.Delete(cm(name, "u-"+name, "9"))
	}
	if s.Len() != 0 {
		t.Errorf("%d entries left after the informer showed every object deleted", s.Len())
	}
	// Recreated: our write of the new object (u-new, at 30) is not ended
	// by a late event of the one it replaced (older), and is by a later
	// event of yet another one.
	s.RecordWrite(key("r"), cm("r", "u-new", "30"))
	fi.Update(cm("r", "u-old", "20"), cm("r", "u-old", "21"))
	if _, behind := s.OwnWriteAhead(key("r"), cm("r", "u-new", "29")); !behind {
		t.Error("a late event of the replaced object ended the entry of our write of its successor")
	}
	fi.Add(cm("r", "u-third", "31"))
	if s.Len() != 0 {
		t.Error("a later object under the name did not end the entry")
	}
}

// TestMemosFollowTheInformer: what callers remember of an object ends when
// the informer shows it deleted, and with nothing else: the number of
// objects remembered has no bound but the objects that exist. A late
// deletion of an earlier object of that name keeps the ledger's entry of
// our write of the one that replaced it.
func TestMemosFollowTheInformer(t *testing.T) {
	s, inf := newState(t)
	const n = 100_000 // beyond the 8,192 the old memory held
	for i := range n {
		name := fmt.Sprint("c-", i)
		s.Remember(key(name), cm(name, "u", "1"), "update", i)
	}
	if s.Len() != n {
		t.Fatalf("%d remembered, want %d", s.Len(), n)
	}
	if v, ok := s.Recall(key("c-0"), "update"); !ok || v != 0 {
		t.Fatalf("the first of %d forgotten: %v, %v", n, v, ok)
	}
	fi, err := inf.FakeInformerFor(context.Background(), &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	fi.Update(cm("c-0", "u", "1"), cm("c-0", "u", "2")) // a status change: kept
	if _, ok := s.Recall(key("c-0"), "update"); !ok {
		t.Error("an update event ended a memo")
	}
	fi.Delete(cm("c-0", "u", "2"))
	if _, ok := s.Recall(key("c-0"), "update"); ok {
		t.Error("remembered after the informer showed the deletion")
	}
	// DeletedFinalStateUnknown, as an informer that missed the deletion
	// hands it over.
	s.deleted(cmGVK, toolscache.DeletedFinalStateUnknown{Key: "ns/c-1", Obj: cm("c-1", "u", "1")})
	if _, ok := s.Recall(key("c-1"), "update"); ok {
		t.Error("remembered after a DeletedFinalStateUnknown")
	}
	// Recreated: our write of the new object (u2) is in the ledger when a
	// late deletion of the old one (u) arrives.
	s.RecordWrite(key("c-2"), cm("c-2", "u2", "50"))
	fi.Delete(cm("c-2", "u", "1"))
	if _, behind := s.OwnWriteAhead(key("c-2"), cm("c-2", "u2", "49")); !behind {
		t.Error("a late deletion of an earlier object ended the ledger's entry of its successor")
	}
	if _, ok := s.Recall(key("c-2"), "update"); ok {
		t.Error("a memo of the old object outlived its deletion")
	}
	s.Forget(key("c-3"), "update")
	if _, ok := s.Recall(key("c-3"), "update"); ok || s.Len() != n-3 {
		t.Errorf("Forget: %d entries, want %d", s.Len(), n-3)
	}
}

// TestNoInformersNoMemos: a State without informers (For's own, for a
// client that carries none) keeps the ledger, which its reads end, and no
// memo, which nothing would end.
func TestNoInformersNoMemos(t *testing.T) {
	s := New(fake.NewClientBuilder().Build(), nil, nil)
	s.Remember(key("a"), cm("a", "u", "1"), "update", 1)
	if _, ok := s.Recall(key("a"), "update"); ok || s.Len() != 0 {
		t.Error("a State without informers remembered a memo")
	}
	s.RecordWrite(key("a"), cm("a", "u", "2"))
	if _, behind := s.OwnWriteAhead(key("a"), cm("a", "u", "1")); !behind {
		t.Error("a State without informers keeps no ledger")
	}
	// For's reads end its entries: one that shows the write, or finds the
	// object gone.
	if _, behind := s.OwnWriteAhead(key("a"), cm("a", "u", "2")); behind || s.Len() != 0 {
		t.Errorf("a read that shows the write left %d entries", s.Len())
	}
	s.RecordWrite(key("b"), cm("b", "u", "3"))
	s.ForgetWrite(key("b"), nil)
	if s.Len() != 0 {
		t.Errorf("a not-found read left %d entries", s.Len())
	}
}

// TestMetadataOnlyIsNotHooked: a metadata-only object, whose informer does
// not show what a write changed, starts no informer, and nothing is
// remembered of it that nothing would end; an unstructured one is hooked.
func TestMetadataOnlyIsNotHooked(t *testing.T) {
	s, inf := newState(t)
	pm := &metav1.PartialObjectMetadata{}
	pm.SetGroupVersionKind(cmGVK)
	pm.SetUID("u")
	pm.SetResourceVersion("1")
	s.Remember(key("p"), pm, "update", 1)
	s.RecordWrite(key("p"), pm)
	if s.Len() != 0 || len(inf.InformersByGVK) != 0 {
		t.Errorf("%d remembered, %d informers asked for; want none", s.Len(), len(inf.InformersByGVK))
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(cmGVK)
	s.Remember(key("u"), u, "update", 1)
	s.Remember(key("t"), cm("t", "u", "1"), "update", 1)
	if s.Len() != 2 || len(s.hooked) != 2 {
		t.Errorf("unstructured and typed: %d remembered, %d hooks; want 2, 2", s.Len(), len(s.hooked))
	}
}

// TestOf: the State a client carries, else the one the context carries for
// the client's cluster (its REST mapper), else none.
func TestOf(t *testing.T) {
	ctx := context.Background()
	m := meta.NewDefaultRESTMapper(nil)
	c := fake.NewClientBuilder().WithRESTMapper(m).Build()
	sameCluster := fake.NewClientBuilder().WithRESTMapper(m).Build()
	other := fake.NewClientBuilder().WithRESTMapper(meta.NewDefaultRESTMapper(nil)).Build()
	s, s2 := New(c, nil, nil), New(other, nil, nil)
	carried := Into(ctx, s)
	for _, tc := range []struct {
		name string
		ctx  context.Context
		c    client.Client
		want *State
	}{
		{"carried by the client", ctx, Wrap(c, s), s},
		{"carried by the client, another in the context", Into(ctx, New(c, nil, nil)), Wrap(c, s), s},
		{"a client of the context's cluster", carried, c, s},
		{"another client of that cluster", carried, sameCluster, s},
		{"a wrapper of such a client", carried, client.WithFieldOwner(sameCluster, "x"), s},
		{"another cluster's client", carried, other, nil},
		{"another cluster's State carried", Into(ctx, s2), c, nil},
		{"nothing carried", ctx, c, nil},
		{"a nil client", carried, nil, nil},
	} {
		if got := Of(tc.ctx, tc.c); got != tc.want {
			t.Errorf("%s: Of = %p, want %p", tc.name, got, tc.want)
		}
	}
	if Held(Wrap(Wrap(c, s), s2)) != s2 {
		t.Error("a client wrapped twice carries the first State")
	}
	if Into(carried, s) != carried {
		t.Error("Into allocated a context carrying s already")
	}
}

// TestLearn: facts are per State (per cluster): one cluster's answer is
// not another's.
func TestLearn(t *testing.T) {
	a, b := New(fake.NewClientBuilder().Build(), nil, nil), New(fake.NewClientBuilder().Build(), nil, nil)
	a.Learn(cmGVK, "status", true)
	if v, known := a.Learned(cmGVK, "status"); !v || !known {
		t.Error("not learned")
	}
	if _, known := b.Learned(cmGVK, "status"); known {
		t.Error("another State knows what one learned")
	}
	var none *State
	none.Learn(cmGVK, "status", true)
	if _, known := none.Learned(cmGVK, "status"); known {
		t.Error("the nil State learned")
	}
}

// TestSettledByTheInformerGoingPast: what is remembered of a write ends
// where the informer has gone past the write without holding the object
// (its deletion's event came before the write was recorded, or the object
// is out of its sight), and only there: a write the informer has not
// shown yet, of an object its store lacks or holds older, is kept (the
// ledger is for a cache behind our own write). The informer's store is
// kept here as an informer keeps it: updated before the handlers are told.
func TestSettledByTheInformerGoingPast(t *testing.T) {
	s, inf := newState(t)
	fi, err := inf.FakeInformerFor(context.Background(), &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	s.RecordWrite(key("hook"), cm("hook", "uh", "1")) // hooks the informer
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	s.mu.Lock()
	s.looks[hookKey{gvk: cmGVK, typ: reflect.TypeOf(&corev1.ConfigMap{})}] = look{store: store}
	s.mu.Unlock()
	event := func(o *corev1.ConfigMap) {
		t.Helper()
		if err := store.Add(o); err != nil {
			t.Fatal(err)
		}
		fi.Add(o)
	}
	kept := func(name, rv string) bool {
		_, behind := s.OwnWriteAhead(key(name), cm(name, "u-"+name, rv))
		return behind
	}

	// Written at 10; the store lacks it and the informer has shown
	// nothing as new: kept, also past an older event.
	s.RecordWrite(key("a"), cm("a", "u-a", "10"))
	event(cm("b", "u-b", "5"))
	if !kept("a", "9") || s.Unshown() != 1 {
		t.Fatalf("a write the informer has not shown: kept %v, %d unshown; want kept, 1", kept("a", "9"), s.Unshown())
	}
	// Its own event: the store holds it; kept until it is deleted.
	event(cm("a", "u-a", "10"))
	if !kept("a", "9") || s.Unshown() != 0 {
		t.Errorf("a write the informer showed: kept %v, %d unshown; want kept, 0", kept("a", "9"), s.Unshown())
	}

	// Written at 20, never in the store (out of the informer's sight):
	// ended at the first event past it.
	s.RecordWrite(key("c"), cm("c", "u-c", "20"))
	s.Remember(key("c"), cm("c", "u-c", "20"), "update", 1)
	if !kept("c", "19") {
		t.Fatal("ended before the informer went past it")
	}
	event(cm("b", "u-b", "25"))
	if _, ok := s.Recall(key("c"), "update"); ok || kept("c", "19") {
		t.Error("a write the informer went past without holding the object is still remembered")
	}

	// Recorded after the informer went past it (its deletion shown
	// before the answer): ended at once. Another of the name held, older
	// than the write: kept (the store has not shown the write); newer:
	// ended. The object held, older than the write: kept.
	s.RecordWrite(key("d"), cm("d", "u-d", "22"))
	if kept("d", "21") {
		t.Error("a write recorded after the informer went past it, of an object its store lacks, is kept")
	}
	if err := store.Add(cm("e", "u-old", "21")); err != nil {
		t.Fatal(err)
	}
	s.RecordWrite(key("e"), cm("e", "u-e", "23"))
	if !kept("e", "22") {
		t.Error("ended where the store holds an older object of the name")
	}
	if err := store.Add(cm("f", "u-f", "18")); err != nil {
		t.Fatal(err)
	}
	s.RecordWrite(key("f"), cm("f", "u-f", "24"))
	if !kept("f", "23") {
		t.Error("ended where the store holds the object older than the write")
	}
	if err := store.Add(cm("g", "u-new", "24")); err != nil {
		t.Fatal(err)
	}
	s.RecordWrite(key("g"), cm("g", "u-g", "23"))
	if kept("g", "22") {
		t.Error("kept where the store holds a newer object of the name")
	}
}

// notSynced is a cache read as a multi-namespace cache answers gone's read
// (its context ended already): the informer of the namespace not synced
// yet (its initial list's events reach the handlers before the informer
// counts itself synced) answers a timeout; then, synced, not found.
type notSynced struct {
	client.Reader
	synced bool
}

func (r *notSynced) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	if !r.synced {
		return apierrors.NewTimeoutError("failed waiting for *v1.ConfigMap Informer to sync", 0)
	}
	return apierrors.NewNotFound(corev1.Resource("configmaps"), key.Name)
}

// TestSettledAfterAReadThatFailed: a read of the cache that fails (an
// informer of a multi-namespace cache not synced yet, its initial list's
// events delivered before it counts itself synced) tells nothing of the
// object: the write stays to settle at a later event, and ends once the
// cache shows the object gone. (Dropped from those to settle on the
// failed read, it was remembered for good.)
func TestSettledAfterAReadThatFailed(t *testing.T) {
	s, inf := newState(t)
	fi, err := inf.FakeInformerFor(context.Background(), &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	s.RecordWrite(key("hook"), cm("hook", "uh", "1")) // hooks the informer
	r := &notSynced{}
	s.mu.Lock()
	s.looks[hookKey{gvk: cmGVK, typ: reflect.TypeOf(&corev1.ConfigMap{})}] = look{reader: r}
	s.mu.Unlock()

	// Written at 10 (released: deleted by the write), the informer of its
	// namespace listing past it, not synced yet.
	s.RecordWrite(key("a"), cm("a", "u-a", "10"))
	fi.Add(cm("b", "u-b", "11"))
	if _, behind := s.OwnWriteAhead(key("a"), cm("a", "u-a", "9")); !behind {
		t.Fatal("ended on a read that failed")
	}
	// Synced: the cache shows a gone; the next event settles it.
	r.synced = true
	fi.Add(cm("c", "u-c", "12"))
	if _, behind := s.OwnWriteAhead(key("a"), cm("a", "u-a", "9")); behind || s.Unshown() != 0 {
		t.Errorf("a write the cache shows gone, past a read that failed: kept %v, %d unshown; want ended, 0", behind, s.Unshown())
	}
}

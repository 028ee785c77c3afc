package cachewait

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// TestTrackerForgetsOwnersNeverAskedAgain: an owner deleted without Forget
// (its last reconcile deleted its children and removed its finalizer) is
// never asked about again; its expectations must go after the TTL, not pile
// up for the life of the process (the bug: they were only dropped by
// CaughtUp of that owner).
func TestTrackerForgetsOwnersNeverAskedAgain(t *testing.T) {
	const ttl = 10 * time.Millisecond
	tr := NewTracker(emptyCluster(), withTTL(ttl))
	child := func(i int) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("c", i),
			UID: types.UID(fmt.Sprint("c", i)), ResourceVersion: "5"}}
	}
	owner := func(i int) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("o", i), UID: types.UID(fmt.Sprint("o", i))}}
	}
	for i := range 100 {
		tr.Deleted(owner(i), child(i))
	}
	time.Sleep(2 * ttl)
	tr.Wrote(owner(1000), child(1000))
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if n := len(tr.pending); n != 1 {
		t.Errorf("%d owners remembered, want 1: the expired ones pile up", n)
	}
}

// TestClientForgetsWritesNeverReadAgain: the client's expectations of
// writes never read again go after the TTL (pruned on the next write), and
// the fresh ones stay.
func TestClientForgetsWritesNeverReadAgain(t *testing.T) {
	const ttl = 10 * time.Millisecond
	c := NewClient(emptyCluster(), withTTL(ttl)).(*waitingClient)
	ctx := context.Background()
	for i := range 10 {
		if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("old", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * ttl)
	if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "new"}}); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pending[corev1.SchemeGroupVersion.WithKind("ConfigMap")]
	if p == nil || len(p.objects) != 1 || p.objects[client.ObjectKey{Namespace: "ns", Name: "new"}] == nil {
		t.Errorf("pending writes after the TTL: %v, want only ns/new", p)
	}
}

// TestTrackerConcurrentUse: Wrote, Deleted and CaughtUp of owners from many
// goroutines, with a TTL short enough that expired expectations are pruned
// meanwhile, lose nothing recorded and race on nothing (-race).
func TestTrackerConcurrentUse(t *testing.T) {
	tr := NewTracker(emptyCluster(), withTTL(time.Millisecond))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("o", g%2), UID: types.UID(fmt.Sprint("o", g%2))}}
			for i := range 300 {
				child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("c", g, "-", i),
					UID: types.UID(fmt.Sprint("c", g, "-", i)), ResourceVersion: "5"}}
				if i%2 == 0 {
					tr.Wrote(owner, child)
				} else {
					tr.Deleted(owner, child)
				}
				if _, err := tr.CaughtUp(context.Background(), owner); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestWantNamesWhatIsKnown: a TimeoutError's Want names the UID only where
// one is known (the bug: "deletion of UID " with nothing after it).
func TestWantNamesWhatIsKnown(t *testing.T) {
	named := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "n"}}
	withUID := named.DeepCopy()
	withUID.UID = "u1"
	for _, tc := range []struct {
		e    *expectation
		want string
	}{
		{newDelete(named, nil, modeDeleted), "deletion (or the mark of it)"},
		{newDelete(named, nil, modeGone), "deletion"},
		{newDelete(withUID, nil, modeDeleted), "deletion (or the mark of it) of UID u1"},
		{newDelete(withUID, nil, modeGone), "deletion of UID u1"},
	} {
		if got := tc.e.wantString(); got != tc.want {
			t.Errorf("want %q, got %q", tc.want, got)
		}
	}
}

// emptyCluster is a Cluster whose cache holds nothing, without an API
// reader.
func emptyCluster() cluster.Cluster { return fakeCluster{c: fake.NewClientBuilder().Build()} }

// fakeCluster is a cluster.Cluster of only a client, without an API
// reader: NewClient and NewTracker use nothing else.
type fakeCluster struct {
	cluster.Cluster
	c client.Client
}

func (c fakeCluster) GetClient() client.Client  { return c.c }
func (fakeCluster) GetAPIReader() client.Reader { return nil }

// withTTL sets a Tracker's TTL.
type withTTL time.Duration

func (w withTTL) ApplyToWait(o *WaitOptions) { o.ttl = time.Duration(w) }

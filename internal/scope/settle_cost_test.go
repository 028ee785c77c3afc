package scope

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// TestSettlingCostsLittlePerEvent: an informer event settles the writes
// it has gone past, not every write it has not shown yet. saw holds the
// State's lock (every reconcile's memory waits on it) and runs for every
// event of every hooked informer: a burst of n writes whose events come
// after their answers (the usual order) must cost about n look-ups, not
// n*n/2 (20000 created children: seconds under the lock).
func TestSettlingCostsLittlePerEvent(t *testing.T) {
	const n = 10000
	s, inf := newState(t)
	fi, err := inf.FakeInformerFor(context.Background(), &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	s.RecordWrite(key("hook"), cm("hook", "uh", "1"))
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	s.mu.Lock()
	s.looks[hookKey{gvk: cmGVK, typ: reflect.TypeOf(&corev1.ConfigMap{})}] = look{store: store}
	s.mu.Unlock()
	objs := make([]*corev1.ConfigMap, n)
	for i := range n {
		name := fmt.Sprint("c", i)
		objs[i] = cm(name, "u"+name, fmt.Sprint(100+i))
		s.RecordWrite(key(name), objs[i])
	}
	var inLock time.Duration
	for _, o := range objs {
		if err := store.Add(o); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		fi.Add(o)
		inLock += time.Since(start)
	}
	t.Logf("%d events: %v (%v each)", n, inLock, inLock/n)
	if s.Unshown() != 0 {
		t.Errorf("%d unshown after every write's event", s.Unshown())
	}
	if inLock > time.Second {
		t.Errorf("%d events, each settling its own write, took %v: each walks every write not shown yet", n, inLock)
	}
}

// TestRewritesWaitingKeepOne: an object written again and again that no
// event of its informer settles (out of its sight, in a namespace quiet
// or not watched at all) waits as its last write only.
func TestRewritesWaitingKeepOne(t *testing.T) {
	s, _ := newState(t)
	s.RecordWrite(key("hook"), cm("hook", "uh", "1"))
	s.mu.Lock()
	s.looks[hookKey{gvk: cmGVK, typ: reflect.TypeOf(&corev1.ConfigMap{})}] = look{store: toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)}
	s.mu.Unlock()
	for i := range 10000 {
		s.RecordWrite(key("out"), cm("out", "u-out", fmt.Sprint(10+i)))
	}
	s.mu.Lock()
	held := 0
	for _, p := range s.unshown {
		held += len(p.order)
	}
	s.mu.Unlock()
	if held > 100 {
		t.Errorf("%d writes held waiting for 1 object", held)
	}
}

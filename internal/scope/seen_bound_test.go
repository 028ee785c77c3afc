package scope

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestNotesOfNamespacesAreBounded: an informer of a multi-namespace cache
// (DefaultNamespaces, one with cache.AllNamespaces among them: a watch of
// every namespace) is noted per namespace its events come from; the notes
// of namespaces quiet since (deleted: a CI cluster's, a tenant's) must not
// add up for the life of the process. The notes still serve: a write
// recorded after its object's deletion event, in a namespace just active,
// ends at once.
func TestNotesOfNamespacesAreBounded(t *testing.T) {
	s, inf := newState(t)
	fi, err := inf.FakeInformerFor(context.Background(), &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	s.RecordWrite(key("hook"), cm("hook", "uh", "1")) // hooks the informer
	s.mu.Lock()
	s.looks[hookKey{gvk: cmGVK, typ: reflect.TypeOf(&corev1.ConfigMap{})}] = look{reader: &notSynced{synced: true}}
	s.mu.Unlock()
	const namespaces = 20000
	for i := range namespaces {
		o := cm("x", fmt.Sprint("u", i), fmt.Sprint(100+i))
		o.Namespace = fmt.Sprint("ns-", i)
		fi.Add(o)
	}
	s.mu.Lock()
	notes := len(s.seen) + len(s.seenNS) + len(s.seenNSOld)
	s.mu.Unlock()
	if notes > namespaces/4 {
		t.Errorf("%d notes after events from %d namespaces, each quiet since: they add up", notes, namespaces)
	}
	// Still noted where it matters: the last namespace active, whose
	// object's deletion came before the write's answer.
	k := Key{GVK: cmGVK, Namespace: fmt.Sprint("ns-", namespaces-1), Name: "x"}
	o := cm("x", fmt.Sprint("u", namespaces-1), fmt.Sprint(100+namespaces-1))
	o.Namespace = k.Namespace
	s.RecordWrite(k, o)
	if _, behind := s.OwnWriteAhead(k, cm("x", string(o.UID), "1")); behind || s.Unshown() != 0 {
		t.Errorf("a write recorded after the informer of its namespace went past it, its object gone: kept %v, %d unshown", behind, s.Unshown())
	}
}

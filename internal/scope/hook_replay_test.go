package scope

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"
)

// replaying is an informer with a store, as client-go's: a handler added
// is first told of every object the store holds (client-go queues those
// to the handler's goroutine, which may run them at once: here they run
// before AddEventHandler returns).
type replaying struct {
	*controllertest.FakeInformer
	store toolscache.Store
}

func (r *replaying) GetStore() toolscache.Store { return r.store }

func (r *replaying) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	for _, o := range r.store.List() {
		h.OnAdd(o, false)
	}
	return r.FakeInformer.AddEventHandler(h)
}

// TestHookReplayCountsForTheInformer: the events of the objects the store
// holds when the hook is added are of an informer with a store: they say
// how far it has gone (a write recorded after it showed the object's
// deletion ends at once), and leave no note per namespace, which such an
// informer never reads again.
func TestHookReplayCountsForTheInformer(t *testing.T) {
	s, inf := newState(t)
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	for i, ns := range []string{"ns-a", "ns-b", "ns-c"} {
		o := cm("held", "u-"+ns, "1"+string(rune('0'+i)))
		o.Namespace = ns
		if err := store.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	inf.InformersByGVK = map[schema.GroupVersionKind]toolscache.SharedIndexInformer{
		cmGVK: &replaying{FakeInformer: controllertest.NewFakeInformer(controllertest.Synced), store: store},
	}
	s.RecordWrite(key("hook"), cm("hook", "uh", "5")) // hooks the informer: the store's objects replayed
	s.mu.Lock()
	notes := len(s.seen)
	s.mu.Unlock()
	if notes != 1 {
		t.Errorf("%d notes of how far the informer has gone after the hook's replay; want 1 (an informer with a store: one for all namespaces)", notes)
	}
	// Deleted before its answer was recorded: the store lacks it, the
	// informer has gone past it.
	s.RecordWrite(key("gone"), cm("gone", "u-gone", "8"))
	if _, behind := s.OwnWriteAhead(key("gone"), cm("gone", "u-gone", "7")); behind || s.Unshown() != 0 {
		t.Errorf("a write the informer had gone past (its replay), of an object its store lacks: kept %v, %d unshown; want ended, 0", behind, s.Unshown())
	}
}

package multicluster_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"weak"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/steadyk8s/steady/indexer"
	"github.com/steadyk8s/steady/multicluster"
)

// countingManager is a manager whose field indexer counts the fields it is
// asked to index; nothing else of it is used.
type countingManager struct {
	mcmanager.Manager
	indexed int
}

func (m *countingManager) GetFieldIndexer() client.FieldIndexer { return countingIndexer{m} }

type countingIndexer struct{ m *countingManager }

func (c countingIndexer) IndexField(context.Context, client.Object, string, client.IndexerFunc) error {
	c.m.indexed++
	return nil
}

// TestFieldIndexerRemembersPerManagerWhileItLives: what FieldIndexer
// returns for one manager, on every call, knows that manager's
// registrations (the same index again is a no-op, another of the same name
// an "already registered" error, and the manager is asked once); another manager's
// knows none of them; and nothing FieldIndexer remembers keeps a manager
// alive once the caller drops it.
func TestFieldIndexerRemembersPerManagerWhileItLives(t *testing.T) {
	ctx := context.Background()
	byNode := indexer.New("test.steady.dev/node", func(p *corev1.Pod) []string { return []string{p.Spec.NodeName} })
	other := indexer.New("test.steady.dev/node", func(p *corev1.Pod) []string { return []string{p.Spec.Hostname} })

	registerTwice := func(m *countingManager) {
		t.Helper()
		for range 2 {
			if err := byNode.Register(ctx, multicluster.FieldIndexer(m)); err != nil {
				t.Fatalf("registering the same index: %v", err)
			}
		}
		if err := other.Register(ctx, multicluster.FieldIndexer(m)); err == nil || !strings.Contains(err.Error(), "already registered") {
			t.Fatalf("another index of the same name: %v, want it already registered", err)
		}
		if m.indexed != 1 {
			t.Fatalf("the manager was asked to index %d times, want once", m.indexed)
		}
	}
	first := &countingManager{}
	registerTwice(first)
	registerTwice(&countingManager{}) // a second manager starts from nothing

	gone := weak.Make(first)
	first = nil
	for range 5 {
		runtime.GC()
		if gone.Value() == nil {
			break
		}
	}
	if gone.Value() != nil {
		t.Fatal("a manager dropped by its caller is still held: FieldIndexer keeps it alive")
	}
	// Another manager's registration drops the collected manager's entry.
	registerTwice(&countingManager{})
}

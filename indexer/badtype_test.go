package indexer_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/indexer"
)

// TestAnIndexOfNoConcreteType: an index whose extract function takes
// client.Object names no kind: Register and Find say so, naming the index,
// where they used to panic.
func TestAnIndexOfNoConcreteType(t *testing.T) {
	idx := indexer.New("by-name", func(o client.Object) []string { return []string{o.GetName()} })
	// client.Object is spelled otherwise on controller-runtime v0.25 (an
	// alias of cacheapi.Object): the test names neither.
	if err := idx.Register(context.Background(), nil); err == nil || !strings.Contains(err.Error(), `index "by-name" is of `) || !strings.Contains(err.Error(), `which names no kind`) {
		t.Errorf("Register: %v", err)
	}
	if _, err := idx.Find(context.Background(), nil, runtime.NewScheme(), "x"); err == nil || !strings.Contains(err.Error(), `which names no kind`) {
		t.Errorf("Find: %v", err)
	}
}

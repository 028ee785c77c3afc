package indexer_test

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/steadyk8s/steady/indexer"
)

// TestConcurrentRegistrationOfTheSameIndex: controllers set up in parallel
// register the same declaration on one cache; each registration succeeds
// (the same *Index is a no-op, never a conflict).
func TestConcurrentRegistrationOfTheSameIndex(t *testing.T) {
	ctx := context.Background()
	for round := 0; round < 60; round++ {
		mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
		if err != nil {
			t.Fatal(err)
		}
		idx := indexer.ControllerOwner[*corev1.Secret]()
		var wg sync.WaitGroup
		errs := make([]error, 32)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = idx.Register(ctx, mgr.GetFieldIndexer())
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d, registration %d: %v", round, i, err)
			}
		}
	}
}

package cachewait_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/steadyk8s/steady/cachewait"
)

const lag = 300 * time.Millisecond

// waitCount is how many waits ended with result ("caught_up", "timeout",
// "error", or "" for all) so far, of every kind.
func waitCount(t testing.TB, result string) uint64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, f := range families {
		if f.GetName() != "steady_cachewait_wait_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && (result == "" || l.GetValue() == result) {
					n += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return n
}

// noTimeouts fails the test if a wait timed out after it was called.
func noTimeouts(t testing.TB) {
	t.Helper()
	before := waitCount(t, "timeout")
	t.Cleanup(func() {
		if n := waitCount(t, "timeout") - before; n > 0 {
			t.Errorf("%d waits timed out", n)
		}
	})
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// deletedBehindOurBack deletes obj as someone else would, and returns when
// the cache has seen it and its deletion.
func deletedBehindOurBack(t testing.TB, cached client.Reader, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	must(t, cachewait.ForWrite(ctx, cached, obj))
	must(t, env.Client.Delete(ctx, obj))
	must(t, cachewait.ForDelete(ctx, cached, obj))
}

const hold = "test.steady.dev/hold"

// release removes every finalizer of obj (through c) and returns the answer.
func release(t testing.TB, c client.Client, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj))
	base := obj.DeepCopyObject().(client.Object)
	obj.SetFinalizers(nil)
	must(t, c.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})))
}

// withWatch makes the manager's client a client.WithWatch for the
// interceptor.
type withWatch struct{ client.Client }

func (withWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("not supported")
}

// caughtUp asks tr until it has caught up for owner, and fails t when that
// takes 60 requeues (the TTL is a minute; 60 requeues of 50ms are 3s).
func caughtUp(t testing.TB, tr *cachewait.Tracker, owner client.Object) {
	t.Helper()
	for i := 0; ; i++ {
		ok, err := tr.CaughtUp(context.Background(), owner)
		must(t, err)
		if ok {
			return
		}
		if i == 60 {
			t.Fatal("the Tracker stalls the owner")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// clusterOf is a cluster.Cluster of a client (an interceptor around the
// manager's, say) and an API reader (nil: none): all NewClient and
// NewTracker use of one.
func clusterOf(c client.Client, api client.Reader) cluster.Cluster {
	return fakeCluster{c: c, api: api}
}

type fakeCluster struct {
	cluster.Cluster
	c   client.Client
	api client.Reader
}

func (c fakeCluster) GetClient() client.Client    { return c.c }
func (c fakeCluster) GetAPIReader() client.Reader { return c.api }

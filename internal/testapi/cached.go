package testapi

import (
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady"
	"github.com/steadyk8s/steady/internal/scope"
	"github.com/steadyk8s/steady/testenv"
)

// Cached is a controller-runtime manager started on a test control plane, as
// an operator runs it: Client (steady.NewClient's, which remembers through
// the manager's informers) reads from the informer cache, whose watch
// events arrive Delay late, and every request of the manager (the cache's
// LISTs and WATCHes included) is counted in Counter. CacheOnly is the
// manager's client carrying a memory of its own, as Client does, but no
// API reader: what reads only the cache, for the paths without one.
type Cached struct {
	Manager   ctrl.Manager
	Client    client.Client
	CacheOnly client.Client
	APIReader client.Reader
	Counter   *Counter
}

// ManagerOptions configures [StartManager].
type ManagerOptions struct {
	// Delay holds back every watch event by this much (0: none).
	Delay time.Duration
	// Informers are started, and synced, before StartManager returns, so
	// that the first read of these kinds does not start a cold informer.
	Informers []client.Object
	// Setup runs on the manager before it starts (index registration,
	// controllers).
	Setup func(ctrl.Manager) error
	// Namespace, when set, is the only namespace the manager's cache
	// watches, so that objects earlier tests left behind elsewhere (in
	// namespaces still terminating) are neither cached nor reconciled.
	Namespace string
}

// StartManager starts a manager on env (testenv.Environment.StartManager)
// whose requests are counted and whose watch events are held back, and
// stops it when the test ends.
func StartManager(t testing.TB, env *testenv.Environment, o ManagerOptions) *Cached {
	t.Helper()
	n := &Counter{}
	opts := []testenv.ManagerOption{testenv.WithTransport(n.Wrap), testenv.WithTransport(testenv.DelayWatches(o.Delay))}
	if o.Setup != nil {
		opts = append(opts, testenv.WithSetup(o.Setup))
	}
	if o.Namespace != "" {
		opts = append(opts, testenv.WithManagerOptions(ctrl.Options{Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{o.Namespace: {}}}}))
	}
	mgr := env.StartManager(t, opts...)
	for _, obj := range o.Informers {
		if _, err := mgr.GetCache().GetInformer(t.Context(), obj); err != nil {
			t.Fatalf("testapi: starting the informer of %T: %v", obj, err)
		}
	}
	mc := mgr.GetClient()
	return &Cached{Manager: mgr, Client: steady.NewClient(mgr), CacheOnly: scope.Wrap(mc, scope.New(mc, nil, mgr.GetCache())),
		APIReader: mgr.GetAPIReader(), Counter: n}
}

// Reading is the manager's client carrying a memory of its own whose API
// reader is r: steady.NewClient's with another reader (one that counts its
// requests, or is refused), or, with a nil r, CacheOnly's like.
func (c *Cached) Reading(r client.Reader) client.Client {
	mc := c.Manager.GetClient()
	return scope.Wrap(mc, scope.New(mc, r, c.Manager.GetCache()))
}

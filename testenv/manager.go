package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// ManagerOptions configures [Environment.StartManager]. The zero value
// starts a manager with the environment's scheme and no metrics server.
type ManagerOptions struct {
	// Manager are the manager's own options. Scheme defaults to the
	// environment's; the metrics server is off unless its BindAddress is
	// set.
	Manager ctrl.Options
	// Setup runs on the manager before it starts: register indexes,
	// controllers and runnables here.
	Setup func(ctrl.Manager) error
	// WrapTransport wrap every request of the manager, its cache's LISTs
	// and WATCHes included (count requests, hold watch events back), in
	// order: each wraps the transport the ones before it made.
	WrapTransport []func(http.RoundTripper) http.RoundTripper
}

// ManagerOption configures [Environment.StartManager].
type ManagerOption interface {
	ApplyToManager(*ManagerOptions)
}

// WithManagerOptions sets the manager's own options (a cache
// configuration, say). Scheme defaults to the environment's; the metrics
// server is off unless its BindAddress is set.
type WithManagerOptions ctrl.Options

// ApplyToManager implements [ManagerOption].
func (m WithManagerOptions) ApplyToManager(o *ManagerOptions) { o.Manager = ctrl.Options(m) }

// WithSetup registers indexes, controllers and runnables on the manager
// before it starts.
type WithSetup func(ctrl.Manager) error

// ApplyToManager implements [ManagerOption].
func (s WithSetup) ApplyToManager(o *ManagerOptions) { o.Setup = s }

// WithTransport wraps every request of the manager: count them
// ([RequestCounter.Wrap]), hold watch events back ([DelayWatches]), inject
// faults. Given more than once, each wraps the transport the ones before it
// made.
type WithTransport func(http.RoundTripper) http.RoundTripper

// ApplyToManager implements [ManagerOption].
func (w WithTransport) ApplyToManager(o *ManagerOptions) {
	o.WrapTransport = append(o.WrapTransport, w)
}

var (
	_ ManagerOption = WithManagerOptions{}
	_ ManagerOption = WithSetup(nil)
	_ ManagerOption = WithTransport(nil)
)

// StartManager starts a controller-runtime manager on the environment, as
// the operator under test would run in a cluster, and stops it when t and
// its subtests end. Its client reads from the informer cache: use it to
// test what users run, and env.Client to check what the API server holds.
//
//	mgr := env.StartManager(t, testenv.WithSetup(func(mgr ctrl.Manager) error {
//		return (&BucketReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
//	}))
//
// Call it in every test that needs a manager: controller names are not
// checked for uniqueness across the process (SkipNameValidation, unless
// the options set it), so the same controllers can be registered in each
// test and with go test -count=2. StartManager returns once the cache has
// synced the informers started so far; to have a test's first read of
// another kind find a warm cache, start its informer then:
//
//	if _, err := mgr.GetCache().GetInformer(ctx, &corev1.Secret{}); err != nil { ... }
//
// A failure to start fails t; a manager
// that stops with an error fails it too, at the end. To stop a manager
// before the test ends, or to expect an error from it, make it with
// [Environment.NewManager] and start it yourself.
func (e *Environment) StartManager(t testing.TB, opts ...ManagerOption) ctrl.Manager {
	t.Helper()
	e.Require(t)
	mgr, err := e.NewManager(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("testenv: the manager stopped with an error: %v", err)
		}
	})
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("testenv: the manager's cache did not sync")
	}
	return mgr
}

// NewManager returns the manager that [Environment.StartManager] would
// start, set up but not started, for a test that runs it itself: one that
// stops a replica mid-test (cancel the context given to its Start) or
// expects an error from Start ("leader election lost" from a replica that
// could not renew its lease). Call env.Require(t) first in a test, so that
// it skips where StartManager would.
//
//	mgr, err := env.NewManager(testenv.WithManagerOptions{LeaderElection: true, ...})
//	ctx, kill := context.WithCancel(context.Background())
//	go func() { done <- mgr.Start(ctx) }()
func (e *Environment) NewManager(opts ...ManagerOption) (ctrl.Manager, error) {
	o := ManagerOptions{}
	for _, opt := range opts {
		opt.ApplyToManager(&o)
	}
	e.mu.Lock()
	started, skip := e.started, e.skip
	e.mu.Unlock()
	if skip != "" {
		return nil, errors.New(skip)
	}
	if !started {
		return nil, errors.New("testenv: the control plane is not running: call env.Run(m) in TestMain, or Start")
	}
	cfg := rest.CopyConfig(e.Config)
	for _, w := range o.WrapTransport {
		if w != nil {
			cfg.Wrap(w)
		}
	}
	mo := o.Manager
	if mo.Scheme == nil {
		mo.Scheme = e.Scheme
	}
	if mo.Metrics.BindAddress == "" {
		mo.Metrics = metricsserver.Options{BindAddress: "0"}
	}
	if mo.Controller.SkipNameValidation == nil {
		// controller-runtime refuses a second controller of a name in one
		// process; every test starts its own manager with the same
		// controllers, and go test -count=2 runs each test twice.
		mo.Controller.SkipNameValidation = ptr.To(true)
	}
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return nil, fmt.Errorf("testenv: creating a manager: %w", err)
	}
	if o.Setup != nil {
		if err := o.Setup(mgr); err != nil {
			return nil, fmt.Errorf("testenv: setting up the manager: %w", err)
		}
	}
	return mgr, nil
}

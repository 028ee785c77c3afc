package testenv

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

// Fleet is several control planes for the tests of code that reconciles
// many clusters: each member is an [Environment] of its own (its etcd, its
// API server, with [WithControllerManager] its controller manager), all from
// the same assets, started concurrently. Make one with [NewFleet], or set
// Members by hand for members configured differently:
//
//	var fleet = testenv.NewFleet(3, testenv.WithCRDs{Paths: []string{"config/crd"}})
//
//	func TestMain(m *testing.M) { os.Exit(fleet.Run(m)) }
//
//	func TestSomething(t *testing.T) {
//		for i, env := range fleet.Members {
//			err := env.Client.Create(ctx, ...) // member i's API server
//		}
//	}
//
// Members share nothing but the test process: a member can be stopped
// ([Environment.Stop]) while the others go on, to test a cluster that
// becomes unreachable. testenv does not depend on multicluster-runtime;
// github.com/steadyk8s/steady/multicluster hands the members to it.
type Fleet struct {
	// Members are the control planes, in order.
	Members []*Environment
}

// NewFleet returns a Fleet of n members, each configured by opts (the same
// options as [New]). Nothing starts until [Fleet.Run].
func NewFleet(n int, opts ...Option) *Fleet {
	f := &Fleet{Members: make([]*Environment, n)}
	for i := range f.Members {
		f.Members[i] = New(opts...)
	}
	return f
}

// start starts every member concurrently and returns once all run. When
// one fails, the others are stopped again and the error names the member
// (errors.Join of every member's error).
func (f *Fleet) start() error {
	if len(f.Members) == 0 {
		return errors.New("testenv: a fleet of no members")
	}
	if err := f.each((*Environment).Start); err != nil {
		return errors.Join(err, f.stop())
	}
	return nil
}

// stop stops every member that runs (concurrently). It is safe to call
// more than once, and after a member was stopped on its own.
func (f *Fleet) stop() error { return f.each((*Environment).Stop) }

// each runs do on every member concurrently and joins their errors.
func (f *Fleet) each(do func(*Environment) error) error {
	errs := make([]error, len(f.Members))
	var wg sync.WaitGroup
	for i, e := range f.Members {
		wg.Go(func() {
			if err := do(e); err != nil {
				errs[i] = fmt.Errorf("testenv: fleet member %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Run starts the fleet, runs the tests and stops the fleet again,
// returning the exit code for os.Exit, as [Environment.Run] does for one
// control plane, missing binaries included: where they were looked for in
// the default places only and the run does not require them, the tests run
// and those that call [Fleet.Require] (or a member's Require, Namespace,
// StartManager) are skipped.
func (f *Fleet) Run(m *testing.M) int {
	return runTests(m, f.start, f.stop, func(why string) {
		for _, e := range f.Members {
			e.skip = why
		}
	})
}

// Require skips t when [Fleet.Run] found no control-plane binaries and the
// run does not require them, and fails it when a member was not started
// (a member stopped on purpose by an earlier test fails it too).
func (f *Fleet) Require(t testing.TB) {
	t.Helper()
	for _, e := range f.Members { // each holds the reason Run skips the tests
		e.Require(t)
	}
}

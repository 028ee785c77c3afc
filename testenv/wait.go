package testenv

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// DefaultEventually is how long [Eventually] waits by default.
const DefaultEventually = 30 * time.Second

// Eventually calls check every 50ms until it returns nil, and fails t with
// what and check's last error when it has not after [DefaultEventually] (or
// the one timeout given). Read through env.Client (a direct client) in
// check to see what the API server holds, not what a cache holds.
func Eventually(t testing.TB, what string, check func() error, timeout ...time.Duration) {
	t.Helper()
	wait := DefaultEventually
	if len(timeout) > 0 {
		wait = timeout[0]
	}
	deadline := time.Now().Add(wait)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %v", what, wait, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitIdle waits until the controller named controller has no reconcile
// running and none queued (controller-runtime's
// controller_runtime_active_workers and workqueue_depth metrics), twice in
// a row, so that a test counting requests counts its own and not those of
// reconciles the manager still had in flight. Wait for the cache to hold
// the last write first ([Eventually] with the manager's client): an event
// still on its way is neither running nor queued.
func WaitIdle(t testing.TB, controller string) {
	t.Helper()
	idleOnce := false
	Eventually(t, "controller "+controller+" idle", func() error {
		busy, err := busyReconciles(controller)
		if err != nil {
			return err
		}
		if busy != 0 {
			idleOnce = false
			return fmt.Errorf("%v reconciles running or queued", busy)
		}
		if !idleOnce {
			idleOnce = true
			return errors.New("idle once, checking again")
		}
		return nil
	})
}

func busyReconciles(controller string) (float64, error) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	busy := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_active_workers" && f.GetName() != "workqueue_depth" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if (l.GetName() == "controller" || l.GetName() == "name") && l.GetValue() == controller {
					busy += m.GetGauge().GetValue()
					break
				}
			}
		}
	}
	return busy, nil
}

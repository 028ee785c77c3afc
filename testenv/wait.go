package testenv

import (
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// defaultEventually is how long [Eventually] waits by default.
const defaultEventually = 30 * time.Second

// Eventually calls check every 50ms until it returns nil, and fails t with
// what and check's last error when it has not after 30 seconds (or
// the one timeout given). Read through env.Client (a direct client) in
// check to see what the API server holds, not what a cache holds.
func Eventually(t testing.TB, what string, check func() error, timeout ...time.Duration) {
	t.Helper()
	wait := defaultEventually
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

// defaultQuiet is how long [WaitIdle] wants a controller to have started
// no reconcile before it counts it idle.
const defaultQuiet = time.Second

// WaitIdle waits until the controller named controller has had no reconcile
// running, none queued (controller-runtime's controller_runtime_active_workers
// and workqueue_depth metrics) and started none
// (controller_runtime_reconcile_total) for a quiet time, one second unless
// quiet gives another, so that a test counting requests counts its own and
// not those of reconciles the manager still had in flight or due. An item
// waiting out a RequeueAfter or an error's backoff is in no queue metric: it
// is waited for when it comes due within the quiet time, and not when it
// comes later (a RequeueAfter of ten minutes does not hold WaitIdle for ten
// minutes; give a longer quiet time to wait for one of seconds). WaitIdle
// fails t when the controller is not idle after 30 seconds (or twice the
// quiet time, if longer). Wait for the cache to hold the last write first
// ([Eventually] with the manager's client): an event still on its way is
// neither running, queued nor due.
func WaitIdle(t testing.TB, controller string, quiet ...time.Duration) {
	t.Helper()
	want := defaultQuiet
	if len(quiet) > 0 && quiet[0] > 0 {
		want = quiet[0]
	}
	timeout := max(defaultEventually, 2*want)
	lastBusy := time.Now()
	lastTotal := -1.0
	Eventually(t, "controller "+controller+" idle", func() error {
		busy, total, err := controllerState(controller)
		if err != nil {
			return err
		}
		if busy != 0 || total != lastTotal {
			lastBusy, lastTotal = time.Now(), total
		}
		if busy != 0 {
			return fmt.Errorf("%v reconciles running or queued", busy)
		}
		if q := time.Since(lastBusy); q < want {
			return fmt.Errorf("quiet for %s of %s", q.Round(time.Millisecond), want)
		}
		return nil
	}, timeout)
}

// controllerState reads, for controller, the reconciles running or queued
// and the count of reconciles started so far.
func controllerState(controller string) (busy, total float64, err error) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return 0, 0, err
	}
	for _, f := range families {
		name := f.GetName()
		if name != "controller_runtime_active_workers" && name != "workqueue_depth" && name != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if (l.GetName() == "controller" || l.GetName() == "name") && l.GetValue() == controller {
					if name == "controller_runtime_reconcile_total" {
						total += m.GetCounter().GetValue()
					} else {
						busy += m.GetGauge().GetValue()
					}
					break
				}
			}
		}
	}
	return busy, total, nil
}

package testenv

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// etcdReadyTimeout bounds StartEtcd's wait for the API server. The API
// server's etcd client redials a refused connection with gRPC's backoff (1s,
// growing 1.6-fold to at most 2 minutes, ±20%), so after a long outage it
// may take up to that long to notice that etcd is back.
const etcdReadyTimeout = 3 * time.Minute

// KillEtcd kills etcd (SIGKILL, no graceful shutdown), as when a cluster's
// etcd crashes, and returns once the process has exited; its data directory
// stays. The kube-apiserver and the controller manager of
// [WithControllerManager] keep running: until [Environment.StartEtcd], the
// API server answers what it serves from memory (discovery, say), and every
// request that needs etcd, reads included, fails or hangs until its deadline,
// so give requests a bounded context. It is a no-op when etcd is already
// down.
//
// While etcd is down, [Environment.StopAPIServer] kills the API server
// (which cannot shut down gracefully without etcd),
// [Environment.StartAPIServer] fails, and [Environment.Stop] works.
func (e *Environment) KillEtcd() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.started {
		return errors.New("testenv: KillEtcd needs a started environment")
	}
	if e.etcdDown {
		return nil
	}
	// Etcd.Stop leaves DataDir in place: it is ours, not envtest's.
	if err := e.killAndWait(etcdBinary, e.Envtest.ControlPlane.Etcd.Stop); err != nil {
		return err
	}
	e.etcdDown = true
	return nil
}

// StartEtcd starts etcd again after [Environment.KillEtcd], on the same data
// directory and the same client URL, the one the kube-apiserver was started
// with: the API server reconnects by itself, and every write that etcd had
// acknowledged before the kill is still there (envtest runs etcd without
// fsync, which loses nothing when only the process dies: the kernel keeps
// what it wrote). It returns once the API server reports ready again
// (/readyz, asked with Config), or, while the API server is stopped
// ([Environment.StopAPIServer]), once etcd is healthy. It is a no-op when
// etcd runs.
//
// How long the API server takes depends on how long etcd was away: its etcd
// client redials with an exponential backoff, so after a kill of a few
// seconds it is ready within a second or two, after one of 40 seconds in up
// to half a minute, and after several minutes in up to two and a half.
//
// Meanwhile the clients of the environment and every running manager need
// nothing: the API server stayed up, and their watches resume or relist once
// it reaches etcd again. For the same reason, and unlike
// [Environment.StartAPIServer], StartEtcd does not restart the controller
// manager of [WithControllerManager]: the API server served discovery from
// memory throughout, so the garbage collector never saw a partial API and
// kept the monitors of every kind, whose informers recover as the managers'
// do; it collects the children of owners deleted after the restart
// (TestEtcdKilledAndStarted).
//
// The client port is reused, not reserved: in the seconds between kill and
// start another process of the machine could take it, and then StartEtcd
// fails. etcd listens for peers on a new port each time, which a cluster of
// one member does not use.
func (e *Environment) StartEtcd(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.started {
		return errors.New("testenv: StartEtcd needs a started environment")
	}
	if !e.etcdDown {
		return nil
	}
	etcd := e.Envtest.ControlPlane.Etcd
	// Start keeps URL, DataDir and the configured arguments, and waits for
	// etcd's /health.
	startErr := etcd.Start()
	// Watch the new process even when it did not become healthy in time:
	// Start may leave it running then.
	watchErr := e.watchChildren()
	if startErr != nil {
		return errors.Join(fmt.Errorf("testenv: starting etcd again on %s with %s: %w", etcd.URL, etcd.DataDir, startErr), watchErr, etcd.Stop())
	}
	e.etcdDown = false
	if watchErr != nil {
		return watchErr
	}
	if e.apiServerDown {
		return nil
	}
	return waitReady(ctx, e.Config, etcdReadyTimeout)
}

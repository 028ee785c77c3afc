package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// StopAPIServer stops the kube-apiserver and leaves etcd (and the
// controller manager of [WithControllerManager]) running: until
// [Environment.StartAPIServer], every client's requests fail with a refused
// connection, as when the API server of a cluster restarts. It is a no-op
// when the API server is already stopped. While etcd is down
// ([Environment.KillEtcd]) the API server cannot shut down gracefully (its
// shutdown hooks write to etcd), so it is killed instead.
func (e *Environment) StopAPIServer() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.started {
		return errors.New("testenv: StopAPIServer needs a started environment")
	}
	if e.apiServerDown {
		return nil
	}
	// Without etcd it is killed. Otherwise APIServer.Stop sends SIGTERM and
	// waits for the process to exit; the certificate directory is ours
	// (CertDir), so it keeps the serving certificate, the client CA and the
	// service-account keys.
	if e.etcdDown {
		if err := e.killAndWait(apiServerBinary, e.Envtest.ControlPlane.APIServer.Stop); err != nil {
			return err
		}
	} else if err := e.Envtest.ControlPlane.APIServer.Stop(); err != nil {
		return fmt.Errorf("testenv: stopping the kube-apiserver: %w", err)
	}
	e.apiServerDown = true
	return nil
}

// StartAPIServer starts the kube-apiserver that [Environment.StopAPIServer]
// stopped, on the same etcd (every object is still there), the same address
// and the same certificates, so that Config, Client and every running
// manager reconnect by themselves: their informers relist or resume their
// watches, as against a cluster whose API server restarted. It returns once
// the API server reports ready (/readyz, asked with Config) and, with
// [WithControllerManager], once a new controller manager has passed its
// readiness check (a child collected, a namespace deleted).
//
// The controller manager is restarted because its garbage collector does not
// reliably survive an API server restart: it may read discovery while the
// new API server serves only part of the API, drop the monitors of the kinds
// missing then, and miss the deletions of their objects, so that their
// children are never collected (the soak in examples/soak saw it; see
// kubernetes/kubernetes#101740 and #60037). A new one builds its graph from a
// full discovery, and collects what became garbage meanwhile. It is a no-op
// when the API server runs, and fails while etcd is down
// ([Environment.KillEtcd]): start etcd first.
//
// The address is reused, not reserved: in the seconds between stop and start
// another process of the machine could take the port, and then StartAPIServer
// fails.
func (e *Environment) StartAPIServer(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.started {
		return errors.New("testenv: StartAPIServer needs a started environment")
	}
	if !e.apiServerDown {
		return nil
	}
	if e.etcdDown {
		return errors.New("testenv: StartAPIServer needs etcd running: call StartEtcd first")
	}
	api := e.Envtest.ControlPlane.APIServer
	// Start keeps SecureServing (address, port and CA), the certificate
	// directory and the client-certificate authority of the first start, so
	// the users that envtest made stay valid.
	if err := api.Start(); err != nil {
		return fmt.Errorf("testenv: starting the kube-apiserver again on %s: %w", api.SecureServing.HostPort(), err)
	}
	e.apiServerDown = false
	if err := e.watchChildren(); err != nil {
		return err
	}
	if err := waitReady(ctx, e.Config, readyTimeout); err != nil {
		return err
	}
	return e.restartControllerManager(ctx)
}

// waitReady polls /readyz with cfg until the API server answers ok, for at
// most timeout: its informers are synced, its post-start hooks (the CRDs'
// among them) done and etcd reachable.
func waitReady(ctx context.Context, cfg *rest.Config, timeout time.Duration) error {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	url := strings.TrimRight(cfg.Host, "/") + "/readyz"
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("testenv: %w", err)
		}
		resp, err := hc.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, body)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: waiting for the kube-apiserver to be ready: %w (last answer: %s)", ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

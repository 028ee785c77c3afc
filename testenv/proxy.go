package testenv

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"

	"k8s.io/client-go/rest"
)

// Proxy is a plain-HTTP endpoint on 127.0.0.1 that forwards every request
// to the environment's kube-apiserver with the environment's credentials,
// through the wrappers given to [Environment.StartProxy]. It is the
// way to test an operator run as its own process, as in a cluster: a
// binary the test built, or a replica it kills with SIGKILL. Give that
// process [Proxy.Config]; it then meets the faults and the lagging watches
// a manager of [Environment.StartManager] would.
type Proxy struct {
	// Config reaches the API server through the proxy, without
	// credentials of its own.
	Config *rest.Config

	srv      *http.Server
	serveErr chan error
	once     sync.Once
}

// StartProxy starts a [Proxy] whose requests pass through the transport
// wrappers given, each wrapping the transport the ones before it made, as
// [WithTransport] does for [Environment.StartManager]: count them, hold
// watch events back ([DelayWatches]), inject faults. A request its
// transport fails (a fault a test injects) is answered by closing the
// connection, as a network would, not with a status the API server never
// sent. Close it with [Proxy.Close].
func (e *Environment) StartProxy(wrap ...func(http.RoundTripper) http.RoundTripper) (*Proxy, error) {
	e.mu.Lock()
	started := e.started
	var cfg *rest.Config
	if started {
		cfg = rest.CopyConfig(e.Config)
	}
	e.mu.Unlock()
	if !started {
		return nil, errors.New("testenv: StartProxy needs a started environment")
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("testenv: the API server's address %q: %w", cfg.Host, err)
	}
	for _, w := range wrap {
		if w != nil {
			cfg.Wrap(w)
		}
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport:     rt,
		FlushInterval: -1, // a watch's events pass at once (or as late as DelayWatches says)
		ErrorHandler:  closeConnection,
		// A watch cut by a fault the test injects, or by a client that went
		// away, is expected here, not news for the test's log.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p := &Proxy{
		Config: &rest.Config{
			Host:  "http://" + ln.Addr().String(),
			QPS:   cfg.QPS,
			Burst: cfg.Burst,
		},
		srv:      &http.Server{Handler: rp, ErrorLog: log.New(io.Discard, "", 0)},
		serveErr: make(chan error, 1),
	}
	go func() { p.serveErr <- p.srv.Serve(ln) }()
	return p, nil
}

// closeConnection answers a request whose forwarding failed by closing
// the client's connection.
func closeConnection(w http.ResponseWriter, _ *http.Request, _ error) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	_ = conn.Close()
}

// Close stops the proxy: it stops listening and cuts every connection,
// open watches included. It is safe to call more than once.
func (p *Proxy) Close() error {
	var err error
	p.once.Do(func() {
		err = p.srv.Close()
		if serveErr := <-p.serveErr; !errors.Is(serveErr, http.ErrServerClosed) {
			err = errors.Join(err, serveErr)
		}
	})
	if err != nil {
		return fmt.Errorf("testenv: closing the proxy: %w", err)
	}
	return nil
}

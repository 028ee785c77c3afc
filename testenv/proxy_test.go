package testenv_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/testenv"
)

// TestProxyIsTheEnvironmentThroughTheTransport: a client of a Proxy's
// Config, without credentials of its own, reads and writes the
// environment's API server; every request passes the first wrapper; a
// request it fails reaches the client as a cut connection, not as a
// status; watch events arrive DelayWatches late;
// and Close cuts an open watch.
func TestProxyIsTheEnvironmentThroughTheTransport(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	const delay = 700 * time.Millisecond
	var requests atomic.Int64
	p, err := env.StartProxy(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			requests.Add(1)
			if strings.HasSuffix(r.URL.Path, "/configmaps/refused") {
				return nil, errors.New("injected fault")
			}
			return rt.RoundTrip(r)
		})
	}, testenv.DelayWatches(delay))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !strings.HasPrefix(p.Config.Host, "http://127.0.0.1:") || p.Config.TLSClientConfig.CertData != nil || p.Config.BearerToken != "" {
		t.Fatalf("the proxy's config is %q with credentials; want plain HTTP on 127.0.0.1 without", p.Config.Host)
	}
	c, err := client.NewWithWatch(p.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "through"}, Data: map[string]string{"a": "1"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatalf("create through the proxy: %v", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil {
		t.Fatalf("the API server does not hold what was written through the proxy: %v", err)
	}
	if requests.Load() == 0 {
		t.Fatal("no request passed the transport wrapper")
	}

	err = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "refused"}, &corev1.ConfigMap{})
	if err == nil || apierrors.ReasonForError(err) != metav1.StatusReasonUnknown || strings.Contains(err.Error(), "Bad Gateway") {
		t.Fatalf("a request the transport failed: %v; want a cut connection, no status", err)
	}

	w, err := c.Watch(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// The initial ADDED of "through", then the change below.
	if ev := <-w.ResultChan(); ev.Type != watch.Added {
		t.Fatalf("first event %v, want ADDED", ev.Type)
	}
	cm.Data["a"] = "2"
	// The clock starts before the write is sent: the API server may send the
	// event before the write's response reaches this test.
	sent := time.Now()
	if err := env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	ev := <-w.ResultChan()
	if late := time.Since(sent); ev.Type != watch.Modified || late < delay {
		t.Fatalf("event %v %s after the write was sent; want MODIFIED, at least %s late", ev.Type, late, delay)
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case ev, open := <-w.ResultChan():
		if open {
			t.Fatalf("after Close, the watch delivered %v", ev.Type)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch is still open 10s after the proxy closed")
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err == nil {
		t.Fatal("a request through a closed proxy succeeded")
	}
}

// roundTripFunc is a RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

package testapi

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/testenv"
)

// Cached is a controller-runtime manager started on a test control plane, as
// an operator runs it: Client reads from the informer cache, whose watch
// events arrive Delay late, and every request of the manager (the cache's
// LISTs and WATCHes included) is counted in Counter.
type Cached struct {
	Manager   ctrl.Manager
	Client    client.Client
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
}

// StartManager starts a manager on env (testenv.Environment.StartManager)
// whose requests are counted and whose watch events are held back, and
// stops it when the test ends.
func StartManager(t testing.TB, env *testenv.Environment, o ManagerOptions) *Cached {
	t.Helper()
	n := &Counter{}
	wrap := testenv.WithTransport(func(rt http.RoundTripper) http.RoundTripper {
		counted := n.Wrap(rt)
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := counted.RoundTrip(r)
			if err == nil && o.Delay > 0 && strings.Contains(r.URL.RawQuery, "watch=true") {
				resp.Body = Lagging(resp.Body, o.Delay)
			}
			return resp, err
		})
	})
	opts := []testenv.ManagerOption{wrap, testenv.WithInformers(o.Informers)}
	if o.Setup != nil {
		opts = append(opts, testenv.WithSetup(o.Setup))
	}
	mgr := env.StartManager(t, opts...)
	return &Cached{Manager: mgr, Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Counter: n}
}

// laggingBody hands out each chunk of a watch stream delay after it
// arrived: the informer sees every event late by a fixed latency, as on a
// loaded cluster, without falling further behind as events pile up.
type laggingBody struct {
	rc      io.ReadCloser
	delay   time.Duration
	chunks  chan chunk
	done    chan struct{}
	once    sync.Once
	pending []byte
}

type chunk struct {
	data []byte
	at   time.Time
	err  error
}

// Lagging wraps a watch response body so that each chunk is read delay
// after it arrived.
func Lagging(rc io.ReadCloser, delay time.Duration) io.ReadCloser {
	b := &laggingBody{rc: rc, delay: delay, chunks: make(chan chunk, 1024), done: make(chan struct{})}
	go func() {
		defer close(b.chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := rc.Read(buf)
			select {
			case b.chunks <- chunk{data: buf[:n], at: time.Now(), err: err}:
			case <-b.done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return b
}

func (b *laggingBody) Read(p []byte) (int, error) {
	for len(b.pending) == 0 {
		c, ok := <-b.chunks
		if !ok {
			return 0, io.EOF
		}
		select {
		case <-time.After(time.Until(c.at.Add(b.delay))):
		case <-b.done:
			return 0, io.EOF
		}
		if len(c.data) == 0 && c.err != nil {
			return 0, c.err
		}
		b.pending = c.data
	}
	n := copy(p, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

func (b *laggingBody) Close() error {
	b.once.Do(func() { close(b.done) })
	return b.rc.Close()
}

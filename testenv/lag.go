package testenv

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// DelayWatches returns a transport wrapper that holds back every watch
// event by delay, as a loaded API server or a slow network does; give it to
// [WithTransport] (or [Environment.StartProxy]):
//
//	env.StartManager(t, testenv.WithTransport(counter.Wrap),
//		testenv.WithTransport(testenv.DelayWatches(300*time.Millisecond)))
//
// The manager's cache then lags behind the API server, and a reconcile that
// runs right after its own write reads the old object. Test your controller
// with it; the bugs it shows (duplicate children, lost writes, conflict
// loops) are the ones users meet in production. A delay of zero or less
// leaves the transport as it is.
func DelayWatches(delay time.Duration) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		if delay <= 0 {
			return rt
		}
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err == nil && strings.Contains(r.URL.RawQuery, "watch=true") {
				resp.Body = lagging(resp.Body, delay)
			}
			return resp, err
		})
	}
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

// lagging wraps a watch response body so that each chunk is read delay
// after it arrived.
func lagging(rc io.ReadCloser, delay time.Duration) io.ReadCloser {
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

package harness

import (
	"io"
	"net/http"
	"strings"
	"time"
)

// delayWatches wraps rt so that every watch stream reaches its reader
// delay late: the manager's cache lags behind the API server by that much,
// as on a loaded cluster, and a reconcile right after a write reads the
// object as it was before it.
func delayWatches(rt http.RoundTripper, delay time.Duration) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		if err == nil && resp.Body != nil && r.Method == http.MethodGet && strings.Contains(r.URL.RawQuery, "watch=true") {
			resp.Body = delayBody(resp.Body, delay)
		}
		return resp, err
	})
}

type timedChunk struct {
	data []byte
	at   time.Time
	err  error
}

// delayBody hands out each chunk read from body delay after it arrived.
func delayBody(body io.ReadCloser, delay time.Duration) io.ReadCloser {
	pr, pw := io.Pipe()
	chunks := make(chan timedChunk, 4096)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := body.Read(buf)
			chunks <- timedChunk{data: buf[:n], at: time.Now(), err: err}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		for c := range chunks {
			time.Sleep(time.Until(c.at.Add(delay)))
			if len(c.data) > 0 {
				if _, err := pw.Write(c.data); err != nil {
					_ = body.Close()
					for range chunks {
					}
					return
				}
			}
			if c.err != nil {
				_ = pw.CloseWithError(c.err) // io.EOF reads as EOF
				return
			}
		}
	}()
	return &pipeBody{PipeReader: pr, body: body}
}

type pipeBody struct {
	*io.PipeReader
	body io.ReadCloser
}

func (p *pipeBody) Close() error {
	_ = p.PipeReader.Close()
	return p.body.Close()
}

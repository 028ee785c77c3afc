package soak

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Fault kinds, as counted in [Report.Faults].
const (
	Fault500        = "500"
	Fault409        = "409"
	Fault429        = "429"
	FaultTimeout    = "timeout (request sent, answer lost)"
	FaultWatchDrop  = "watch connection dropped"
	faultReadPrefix = "read "
)

// faults fails a share of the manager's requests while on: writes are
// answered 500, 409 or 429 before they reach the API server, or sent and
// their answer lost (a timeout after the write); reads (GET, LIST, not
// WATCH) are answered 500 or 429 or time out; a share of watch connections
// is cut a few seconds after it opens.
type faults struct {
	on        atomic.Bool
	rate      float64
	watchDrop float64
	mu        sync.Mutex
	rng       *rand.Rand
	counts    map[string]int
}

func newFaults(rate, watchDrop float64, seed uint64) *faults {
	return &faults{rate: rate, watchDrop: watchDrop, rng: rand.New(rand.NewPCG(seed, 7)), counts: map[string]int{}}
}

// Counts returns the faults injected so far, by kind.
func (f *faults) Counts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int, len(f.counts))
	for k, v := range f.counts {
		out[k] = v
	}
	return out
}

func (f *faults) pick(write, watch bool) (string, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if watch {
		if f.rng.Float64() >= f.watchDrop {
			return "", 0
		}
		f.counts[FaultWatchDrop]++
		return FaultWatchDrop, time.Duration(1000+f.rng.IntN(5000)) * time.Millisecond
	}
	if f.rng.Float64() >= f.rate {
		return "", 0
	}
	kinds := []string{Fault500, Fault429, FaultTimeout}
	if write {
		kinds = append(kinds, Fault409)
	}
	kind := kinds[f.rng.IntN(len(kinds))]
	if write {
		f.counts[kind]++
	} else {
		f.counts[faultReadPrefix+kind]++
	}
	return kind, 0
}

func (f *faults) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		if !f.on.Load() {
			return rt.RoundTrip(r)
		}
		watch := strings.Contains(r.URL.RawQuery, "watch=true")
		write := r.Method != http.MethodGet && r.Method != http.MethodHead
		kind, after := f.pick(write, watch)
		switch kind {
		case "":
			return rt.RoundTrip(r)
		case FaultWatchDrop:
			resp, err := rt.RoundTrip(r)
			if err == nil {
				body := resp.Body
				time.AfterFunc(after, func() { _ = body.Close() })
			}
			return resp, err
		case FaultTimeout:
			resp, err := rt.RoundTrip(r)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
			return nil, errors.New("soak: timeout: the request was sent, its answer lost")
		}
		code, _ := strconv.Atoi(kind)
		reason := map[int]metav1.StatusReason{500: metav1.StatusReasonInternalError, 409: metav1.StatusReasonConflict,
			429: metav1.StatusReasonTooManyRequests}[code]
		body := fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":%q,"code":%d,"message":"soak: injected"}`, reason, code)
		h := http.Header{"Content-Type": {"application/json"}}
		if code == 429 {
			h.Set("Retry-After", "0")
		}
		return &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(bytes.NewBufferString(body)), Request: r}, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

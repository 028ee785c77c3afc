package harness

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Key is one kind of request: its verb (GET, LIST, WATCH, POST, PUT, PATCH,
// DELETE), resource and subresource, whether it was a dry run, and the
// status code of the answer (0: no answer).
type Key struct {
	Verb        string
	Resource    string
	Subresource string
	DryRun      bool
	Code        int
}

// String is "PATCH teams/status 200", "DRYRUN PUT configmaps 200".
func (k Key) String() string {
	s := k.Verb + " " + k.Resource
	if k.Subresource != "" {
		s += "/" + k.Subresource
	}
	if k.DryRun {
		s = "DRYRUN " + s
	}
	return fmt.Sprintf("%s %d", s, k.Code)
}

// MarshalText writes the key as String does: a Counts is a JSON object
// keyed by it (-json of cmd/bench).
func (k Key) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads what MarshalText writes (-from-json of cmd/bench).
func (k *Key) UnmarshalText(text []byte) error {
	fields := strings.Fields(string(text))
	var dry bool
	if len(fields) == 4 && fields[0] == "DRYRUN" {
		dry, fields = true, fields[1:]
	}
	if len(fields) != 3 {
		return fmt.Errorf("request key %q: want \"[DRYRUN ]VERB resource[/subresource] code\"", text)
	}
	code, err := strconv.Atoi(fields[2])
	if err != nil {
		return fmt.Errorf("request key %q: code: %w", text, err)
	}
	resource, sub, _ := strings.Cut(fields[1], "/")
	*k = Key{Verb: fields[0], Resource: resource, Subresource: sub, DryRun: dry, Code: code}
	return nil
}

// Write reports whether the request was a write (POST, PUT, PATCH,
// DELETE), dry runs included.
func (k Key) Write() bool {
	switch k.Verb {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// OK reports whether the API server accepted the request.
func (k Key) OK() bool { return k.Code >= 200 && k.Code < 300 }

// Stat is what was counted for one Key.
type Stat struct {
	Count     int64
	ReqBytes  int64
	RespBytes int64
}

// Counts are the stats of every Key seen.
type Counts map[Key]Stat

// Sub returns c minus before, leaving out keys with nothing left.
func (c Counts) Sub(before Counts) Counts {
	out := Counts{}
	for k, s := range c {
		b := before[k]
		d := Stat{Count: s.Count - b.Count, ReqBytes: s.ReqBytes - b.ReqBytes, RespBytes: s.RespBytes - b.RespBytes}
		if d != (Stat{}) {
			out[k] = d
		}
	}
	return out
}

// Add returns c plus other.
func (c Counts) Add(other Counts) Counts {
	out := make(Counts, len(c))
	for k, s := range c {
		out[k] = s
	}
	for k, s := range other {
		t := out[k]
		out[k] = Stat{Count: t.Count + s.Count, ReqBytes: t.ReqBytes + s.ReqBytes, RespBytes: t.RespBytes + s.RespBytes}
	}
	return out
}

// Sum adds up the stats of the keys for which keep is true.
func (c Counts) Sum(keep func(Key) bool) Stat {
	var t Stat
	for k, s := range c {
		if keep == nil || keep(k) {
			t.Count += s.Count
			t.ReqBytes += s.ReqBytes
			t.RespBytes += s.RespBytes
		}
	}
	return t
}

// Requests counts the requests for which keep is true.
func (c Counts) Requests(keep func(Key) bool) int64 { return c.Sum(keep).Count }

// String lists the request counts by key, sorted, as "PATCH teams/status
// 200=20, POST configmaps 201=20"; watches and discovery are left out.
func (c Counts) String() string {
	var parts []string
	for k, s := range c {
		if k.Verb == "WATCH" || k.Verb == "DISCOVERY" || s.Count == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%d", k, s.Count))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// Counter counts the requests of a rest.Config's transport by Key, with
// the bytes sent and received (a watch's bytes as its events arrive). Wrap
// is a rest.Config WrapTransport. Safe for concurrent use.
type Counter struct {
	mu     sync.Mutex
	counts Counts
	// requests (watches aside) and the time of the last one, in unix
	// nanoseconds, for idle checks.
	requests atomic.Int64
	last     atomic.Int64
}

// Wrap wraps rt so that every request through it is counted.
func (c *Counter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		k := classify(r)
		if k.Verb != "WATCH" {
			c.requests.Add(1)
			c.last.Store(time.Now().UnixNano())
		}
		var reqBytes int64
		if r.ContentLength > 0 {
			reqBytes = r.ContentLength
		}
		resp, err := rt.RoundTrip(r)
		if err == nil {
			k.Code = resp.StatusCode
		}
		if k.Verb != "WATCH" {
			c.last.Store(time.Now().UnixNano())
		}
		c.add(k, Stat{Count: 1, ReqBytes: reqBytes})
		if err == nil && resp.Body != nil {
			resp.Body = &countingBody{ReadCloser: resp.Body, add: func(n int64) { c.add(k, Stat{RespBytes: n}) }}
		}
		return resp, err
	})
}

func (c *Counter) add(k Key, s Stat) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = Counts{}
	}
	t := c.counts[k]
	t.Count += s.Count
	t.ReqBytes += s.ReqBytes
	t.RespBytes += s.RespBytes
	c.counts[k] = t
}

// Snapshot returns a copy of the counts so far.
func (c *Counter) Snapshot() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(Counts, len(c.counts))
	for k, s := range c.counts {
		out[k] = s
	}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type countingBody struct {
	io.ReadCloser
	add func(int64)
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.add(int64(n))
	}
	return n, err
}

// classify names a request by its method and path:
// /api/v1/namespaces/<ns>/<resource>/<name>/<subresource>,
// /apis/<group>/<version>/..., anything shorter is discovery.
func classify(r *http.Request) Key {
	k := Key{Verb: r.Method, DryRun: strings.Contains(r.URL.RawQuery, "dryRun=All")}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	skip := 3 // apis/<group>/<version>
	if len(parts) > 0 && parts[0] == "api" {
		skip = 2 // api/v1
	}
	if len(parts) <= skip {
		k.Verb = "DISCOVERY"
		return k
	}
	parts = parts[skip:]
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:] // a namespaced resource
	}
	k.Resource = parts[0]
	if len(parts) >= 3 {
		k.Subresource = parts[2]
	}
	if r.Method == http.MethodGet {
		switch {
		case strings.Contains(r.URL.RawQuery, "watch=true") || strings.Contains(r.URL.RawQuery, "watch=1"):
			k.Verb = "WATCH"
		case len(parts) == 1:
			k.Verb = "LIST"
		}
	}
	return k
}

package testenv

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// RequestCounter counts API requests per verb (GET, LIST, WATCH, POST, PUT,
// PATCH, DELETE; a dry run as DRYRUN-PATCH and so on), to measure what a
// controller costs: wrap a manager's transport with [RequestCounter.Wrap]
// (testenv.WithTransport(counter.Wrap)) or a rest.Config's. Discovery
// requests, which a client makes once per group-version when it first needs
// a REST mapping, are counted apart, as DISCOVERY, and left out of String.
//
// The zero value is ready to use and safe for concurrent use.
type RequestCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

type roundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip implements http.RoundTripper.
func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (n *RequestCounter) add(r *http.Request) {
	verb := r.Method
	if strings.Contains(r.URL.RawQuery, "dryRun=All") {
		verb = "DRYRUN-" + verb
	}
	if verb == http.MethodGet && strings.Contains(r.URL.RawQuery, "watch=true") {
		verb = "WATCH"
	} else if verb == http.MethodGet {
		switch kind(r.URL.Path) {
		case "list":
			verb = "LIST"
		case "discovery":
			verb = "DISCOVERY"
		}
	}
	n.mu.Lock()
	if n.counts == nil {
		n.counts = map[string]int{}
	}
	n.counts[verb]++
	n.mu.Unlock()
}

// kind tells from the path whether a GET is discovery, lists a collection
// or reads one object.
func kind(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	// /api/v1/<res>, /api/v1/namespaces/<ns>/<res>, /apis/<g>/<v>/<res>, ...
	skip := 3 // apis/<group>/<version>
	if parts[0] == "api" {
		skip = 2 // api/v1
	}
	if len(parts) <= skip {
		return "discovery"
	}
	parts = parts[skip:]
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) != 2 {
		parts = parts[2:]
	}
	if len(parts) == 1 {
		return "list"
	}
	return "object"
}

// Wrap wraps rt so that every request through it is counted; it is a
// rest.Config WrapTransport and a [WithTransport].
func (n *RequestCounter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		n.add(r)
		return rt.RoundTrip(r)
	})
}

// Reset forgets what was counted.
func (n *RequestCounter) Reset() {
	n.mu.Lock()
	n.counts = map[string]int{}
	n.mu.Unlock()
}

// Get returns the count for one verb.
func (n *RequestCounter) Get(verb string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.counts[verb]
}

// Writes is the count of POST, PUT, PATCH and DELETE requests that are not
// dry runs (counted as DRYRUN-PATCH and so on).
func (n *RequestCounter) Writes() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.counts["POST"] + n.counts["PUT"] + n.counts["PATCH"] + n.counts["DELETE"]
}

// String lists the counts, as "GET=1 PATCH=2".
func (n *RequestCounter) String() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var s []string
	for v, c := range n.counts {
		if v == "DISCOVERY" {
			continue
		}
		s = append(s, fmt.Sprintf("%s=%d", v, c))
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

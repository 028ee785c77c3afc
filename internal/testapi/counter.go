package testapi

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Counter counts API requests per verb (GET, LIST, PATCH, ...). Discovery
// requests, which a client makes once per group-version when it first needs
// a REST mapping, are counted apart, as DISCOVERY, and left out of String.
type Counter struct {
	mu     sync.Mutex
	counts map[string]int
}

// NewCountingClient returns a direct client whose requests are counted.
func NewCountingClient(cfg *rest.Config, scheme *runtime.Scheme) (client.Client, *Counter, error) {
	n := &Counter{counts: map[string]int{}}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			n.add(r)
			return rt.RoundTrip(r)
		})
	})
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	return c, n, err
}

type roundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip implements http.RoundTripper.
func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (n *Counter) add(r *http.Request) {
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

// Reset forgets what was counted.
func (n *Counter) Reset() {
	n.mu.Lock()
	n.counts = map[string]int{}
	n.mu.Unlock()
}

// Get returns the count for one verb.
func (n *Counter) Get(verb string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.counts[verb]
}

// Writes is the count of POST, PUT, PATCH and DELETE requests that are not
// dry runs (counted as DRYRUN-PATCH and so on).
func (n *Counter) Writes() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.counts["POST"] + n.counts["PUT"] + n.counts["PATCH"] + n.counts["DELETE"]
}

// String lists the counts, as "GET=1 PATCH=2".
func (n *Counter) String() string {
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

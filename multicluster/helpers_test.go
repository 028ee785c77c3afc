package multicluster_test

import (
	"net/http"

	"k8s.io/client-go/rest"

	"github.com/steadyk8s/steady/testenv"
)

// wrapped is e's config with its requests counted by c.
func wrapped(e *testenv.Environment, c *testenv.RequestCounter) *rest.Config {
	cfg := rest.CopyConfig(e.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return c.Wrap(rt) })
	return cfg
}

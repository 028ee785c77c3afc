package testapi

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/testenv"
)

// Counter counts API requests per verb: testenv's RequestCounter.
type Counter = testenv.RequestCounter

// NewCountingClient returns a direct client whose requests are counted.
func NewCountingClient(cfg *rest.Config, scheme *runtime.Scheme) (client.Client, *Counter, error) {
	n := &Counter{}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(n.Wrap)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	return c, n, err
}

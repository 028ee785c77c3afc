// Package fleettest hands the control planes of a testenv.Fleet to
// multicluster-runtime, for the tests of a controller that reconciles a
// fleet: member i is the cluster [Name](i), which joins with
// [Provider.Join] and leaves with [Provider.Leave], at any time.
//
//	var fleet = testenv.NewFleet(3, testenv.WithCRDs{Paths: []string{"config/crd"}})
//
//	func TestMain(m *testing.M) { os.Exit(fleet.Run(m)) }
//
//	func TestFleet(t *testing.T) {
//		p := fleettest.NewProvider(fleet)
//		mgr, err := mcmanager.New(fleet.Members[0].Config, p, mcmanager.Options{...})
//		... // register the controller, start mgr
//		p.Join(ctx, 0, 1, 2)
//	}
package fleettest

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	mc "sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	"sigs.k8s.io/multicluster-runtime/providers/clusters"

	"github.com/steadyk8s/steady/testenv"
)

// Name is the cluster name of member i: "member-<i>".
func Name(i int) mc.ClusterName { return mc.ClusterName("member-" + strconv.Itoa(i)) }

// Member is the index of the member whose cluster name is name, and false
// for a name that is not a member's.
func Member(name mc.ClusterName) (int, bool) {
	s, ok := strings.CutPrefix(string(name), "member-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	return i, err == nil
}

// ProviderOptions configures [NewProvider]. The zero value hands each
// member over with its environment's scheme and nothing else.
type ProviderOptions struct {
	// WrapTransport wraps every request of member i's cluster (its cache's
	// lists and watches, its client, its API reader): count them, say.
	WrapTransport func(member int, rt http.RoundTripper) http.RoundTripper
	// Cluster are further options of each member's cluster.
	Cluster []cluster.Option
}

// ProviderOption configures [NewProvider].
type ProviderOption interface{ ApplyToProvider(*ProviderOptions) }

// WithTransport wraps every request of each member's cluster.
type WithTransport func(member int, rt http.RoundTripper) http.RoundTripper

// ApplyToProvider implements [ProviderOption].
func (w WithTransport) ApplyToProvider(o *ProviderOptions) { o.WrapTransport = w }

// WithClusterOptions adds options of each member's cluster (a cache
// configuration, say).
type WithClusterOptions []cluster.Option

// ApplyToProvider implements [ProviderOption].
func (c WithClusterOptions) ApplyToProvider(o *ProviderOptions) { o.Cluster = append(o.Cluster, c...) }

var (
	_ ProviderOption = WithTransport(nil)
	_ ProviderOption = WithClusterOptions(nil)
)

// Provider is a multicluster-runtime provider (its providers/clusters
// provider) of a fleet's members: pass it to mcmanager.New, which starts
// it. No member is a cluster until it joins.
type Provider struct {
	*clusters.Provider
	fleet *testenv.Fleet
	opts  ProviderOptions
}

// NewProvider returns a Provider of fleet's members.
func NewProvider(fleet *testenv.Fleet, opts ...ProviderOption) *Provider {
	p := &Provider{Provider: clusters.New(), fleet: fleet}
	for _, o := range opts {
		o.ApplyToProvider(&p.opts)
	}
	return p
}

// Join makes each member a cluster of the fleet: a new cluster.Cluster
// (its own cache and clients) on the member's API server, which the
// provider starts and engages once its cache has synced (the manager's
// controllers then watch and reconcile it). Before the manager starts, the
// members wait for it.
func (p *Provider) Join(ctx context.Context, members ...int) error {
	for _, i := range members {
		if i < 0 || i >= len(p.fleet.Members) {
			return fmt.Errorf("fleettest: no member %d in a fleet of %d", i, len(p.fleet.Members))
		}
		e := p.fleet.Members[i]
		if e.Config == nil {
			return fmt.Errorf("fleettest: member %d is not started", i)
		}
		cfg := rest.CopyConfig(e.Config)
		if w := p.opts.WrapTransport; w != nil {
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return w(i, rt) })
		}
		opts := append([]cluster.Option{func(o *cluster.Options) { o.Scheme = e.Scheme }}, p.opts.Cluster...)
		cl, err := cluster.New(cfg, opts...)
		if err != nil {
			return fmt.Errorf("fleettest: member %d: %w", i, err)
		}
		if err := p.Add(ctx, Name(i), cl); err != nil {
			return fmt.Errorf("fleettest: member %d: %w", i, err)
		}
	}
	return nil
}

// Leave removes members from the fleet: their clusters stop (cache and
// watches) and every controller disengages them.
func (p *Provider) Leave(members ...int) {
	for _, i := range members {
		p.Remove(Name(i))
	}
}

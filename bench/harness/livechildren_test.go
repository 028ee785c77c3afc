package harness

import (
	"context"
	"testing"
)

// TestLiveChildrenSmoke runs MeasureLiveChildren with 20 children per way
// (make bench runs 10,000) and checks what does not depend on timing: each
// create pass made the 20 Deployments, steady's calls cost no request for a
// converged child in any pass but the create (its status changed by the
// deployment controller and another writer, another field manager's
// fields on it, a restart), and no way removed another field manager's
// label or spec.minReadySeconds.
func TestLiveChildrenSmoke(t *testing.T) {
	env.Require(t)
	const n = 20
	costs, err := MeasureLiveChildren(context.Background(), env.Config, env.Client, LiveVariants, n, 2, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range costs {
		created := c.Passes[LivePassCreate].Requests(func(k Key) bool { return k.Code == 201 && k.Resource == "deployments" && !k.DryRun })
		if got := created; got != n {
			t.Errorf("%s: %d Deployments created, want %d", c.Variant, got, n)
		}
		if c.OthersLost != 0 {
			t.Errorf("%s: another field manager's fields gone from %d children", c.Variant, c.OthersLost)
		}
		if c.Variant == LiveControllerutil {
			continue // the baseline: reported, not asserted
		}
		for _, pass := range LivePasses[1:] {
			if req, _ := c.PerChild(pass); req != 0 {
				t.Errorf("%s, %s: %.2f requests per converged child, want 0: %s", c.Variant, pass, req, c.Passes[pass])
			}
		}
	}
}

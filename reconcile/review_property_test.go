package reconcile_test

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// Through a manager's lagging cache (no API reader, and with one), from a
// snapshot that is the cache's stale copy or the API server's fresh one,
// with another writer changing finalizers, conditions, labels and status
// at random just before our Patch: Patch succeeds, everything both wrote
// is stored.
func TestPropertyLaggingCacheLosesNothing(t *testing.T) {
	env.Require(t)
	rng := seededRand(t)
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 200 * time.Millisecond, Informers: []client.Object{&testapi.Widget{}}})
	ctx := context.Background()
	ns := env.Namespace(t)
	for round := range 10 {
		apiReader, fromCache := rng.Intn(2) == 0, rng.Intn(2) == 0
		t.Run(fmt.Sprintf("%d/api reader %v/cached snapshot %v", round, apiReader, fromCache), func(t *testing.T) {
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("w%d", round),
				Finalizers: []string{"base.io/f"}}}
			if err := env.Client.Create(ctx, w); err != nil {
				t.Fatal(err)
			}
			waitCached(t, cc.Client, w, w.ResourceVersion)
			// A first change the cache will not see for a while.
			first := get(t, w)
			conditions.MarkTrue(first, "Base", "Set", "")
			if err := env.Client.Status().Update(ctx, first); err != nil {
				t.Fatal(err)
			}
			obj := &testapi.Widget{}
			if fromCache {
				_ = cc.Client.Get(ctx, client.ObjectKeyFromObject(w), obj)
			} else {
				obj = get(t, w)
			}
			var opts []reconcile.PatcherOption
			if apiReader {
				opts = append(opts, reconcile.WithAPIReader{Reader: cc.APIReader})
			}
			p, _ := reconcile.NewPatcher(cc.Client, obj, opts...)
			// Ours.
			mine := rng.Intn(8) + 1
			if mine&1 != 0 {
				obj.Finalizers = append(obj.Finalizers, "mine.io/f")
			}
			if mine&2 != 0 {
				conditions.MarkTrue(obj, "Mine", "Set", "")
			}
			if mine&4 != 0 {
				obj.Status.Phase = "Mine"
				obj.Spec.Size = 5
			}
			if mine == 8 {
				obj.Labels = map[string]string{"mine": "1"}
			}
			// Theirs, meanwhile.
			theirs := rng.Intn(4)
			other := get(t, w)
			if theirs&1 != 0 {
				other.Finalizers = append(other.Finalizers, "their.io/f")
				other.Labels = map[string]string{"their": "1"}
				if err := env.Client.Update(ctx, other); err != nil {
					t.Fatal(err)
				}
				other = get(t, w)
			}
			if theirs&2 != 0 {
				conditions.MarkTrue(other, "Theirs", "Set", "")
				other.Status.Replicas = 3
				if err := env.Client.Status().Update(ctx, other); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.Patch(ctx, obj); err != nil {
				t.Fatalf("Patch: %v", err)
			}
			got := get(t, w)
			var lost []string
			check := func(ok bool, what string) {
				if !ok {
					lost = append(lost, what)
				}
			}
			check(slices.Contains(got.Finalizers, "base.io/f"), "base finalizer")
			check(conditions.IsTrue(got, "Base"), "Base condition")
			check(mine&1 == 0 || slices.Contains(got.Finalizers, "mine.io/f"), "our finalizer")
			check(mine&2 == 0 || conditions.IsTrue(got, "Mine"), "our condition")
			check(mine&4 == 0 || (got.Status.Phase == "Mine" && got.Spec.Size == 5), "our phase and size")
			check(mine != 8 || got.Labels["mine"] == "1", "our label")
			check(theirs&1 == 0 || (slices.Contains(got.Finalizers, "their.io/f") && got.Labels["their"] == "1"), "their finalizer and label")
			check(theirs&2 == 0 || (conditions.IsTrue(got, "Theirs") && got.Status.Replicas == 3), "their condition and replicas")
			if len(lost) > 0 {
				t.Errorf("mine %b, theirs %b: lost %v; stored %+v", mine, theirs, lost, got)
			}
		})
	}
	t.Logf("requests: %s", cc.Counter)
}

// seededRand returns a random source whose seed the test logs, so that a
// failing run can be repeated.
func seededRand(t *testing.T) *rand.Rand {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	return rand.New(rand.NewSource(seed))
}

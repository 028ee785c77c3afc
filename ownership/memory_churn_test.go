package ownership_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/scope"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/testenv"
)

// cacheShowsWidgets waits until cc's cache holds exactly want Widgets in
// ns (their deletions, or their creations, shown to the informer).
func cacheShowsWidgets(t *testing.T, cc *testapi.Cached, ns string, want int) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("the cache shows %d owners", want), func() error {
		var l testapi.WidgetList
		if err := cc.Manager.GetClient().List(context.Background(), &l, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(l.Items) != want {
			return fmt.Errorf("%d owners in the cache", len(l.Items))
		}
		return nil
	})
}

// TestApplyForgetsOwnersGone: Apply's memory of a child is bounded by the
// child, not by the owners that ever applied it. Owners are deleted (no
// garbage collector runs here: their children stay, as orphaned or
// restored children do) and created again under their names, with new
// UIDs; each new owner takes its child back (RecordOwner) with Apply. Once
// the informer shows the old owners gone, nothing is remembered of them:
// the State holds as many memos as before, one per child, round after
// round.
func TestApplyForgetsOwnersGone(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startCached(t)
	ns := env.Namespace(t)
	s := scope.Held(cc.Client)
	const n, rounds = 100, 3
	owners := make([]*testapi.Widget, n)
	apply := func(round int) {
		t.Helper()
		for i, o := range owners {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("child-", i)}}
			op, err := applyFn(ctx, cc.Client, o, cm, func() error { cm.Data = map[string]string{"k": "v"}; return nil }, ownership.RecordOwner{})
			if err != nil {
				t.Fatalf("round %d, child %d: %v", round, i, err)
			}
			if want := map[bool]controllerutil.OperationResult{true: "created", false: "updated"}[round == 0]; op != want {
				t.Fatalf("round %d, child %d: %s, want %s", round, i, op, want)
			}
		}
	}
	var base int
	for round := range rounds {
		for i := range owners {
			owners[i] = owner(t, ns, fmt.Sprint("owner-", i))
		}
		cacheShowsWidgets(t, cc, ns, n)
		apply(round)
		if round == 0 {
			base = s.Memos()
			if base < n {
				t.Fatalf("%d memos after applying %d children, want at least %d", base, n, n)
			}
		}
		for i, o := range owners {
			var cm corev1.ConfigMap
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprint("child-", i)}, &cm); err != nil {
				t.Fatal(err)
			}
			if !metav1.IsControlledBy(&cm, o) {
				t.Fatalf("round %d: %s not controlled by its owner of this round: %v", round, cm.Name, cm.OwnerReferences)
			}
		}
		if got := s.Memos(); got != base {
			t.Errorf("round %d: %d memos, want %d (one per child, as after the first round): what is remembered of deleted owners is not forgotten", round, got, base)
		}
		if round == rounds-1 {
			break
		}
		for _, o := range owners {
			if err := env.Client.Delete(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		cacheShowsWidgets(t, cc, ns, 0)
	}
}

package reconcile_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/reconcile"
)

// A reconcile read Ready=True (since an hour ago) and writes it True again,
// with a new message, or as an owned condition; meanwhile another writer
// flipped it to False (half an hour ago). The write, rebased on the live
// False, flips it back: that transition happens now. It used to be written
// with the snapshot's lastTransitionTime, an hour ago: older than the live
// one, a transition in the past (True "since an hour ago", though it was
// False half an hour ago). Nor before the live one where its writer's
// clock is ahead of ours.
func TestAFlipOverANewerTransitionIsNow(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts []reconcile.PatchOption
		mark func(obj conditions.Setter)
		// ahead: the other writer's clock is a minute ahead of ours.
		ahead bool
	}{
		{name: "changed message", mark: func(obj conditions.Setter) { conditions.MarkTrue(obj, conditions.Ready, "Done", "a new message") }},
		{name: "owned", opts: []reconcile.PatchOption{reconcile.WithOwnedConditions{conditions.Ready}},
			mark: func(obj conditions.Setter) { conditions.MarkTrue(obj, conditions.Ready, "Done", "") }},
		{name: "the other writer's clock ahead", mark: func(obj conditions.Setter) { conditions.MarkTrue(obj, conditions.Ready, "Done", "a new message") },
			ahead: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, c, _ := fixture(t)
			then := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
			conditions.Set(w, metav1.Condition{Type: conditions.Ready, Status: metav1.ConditionTrue, Reason: "Done", LastTransitionTime: then})
			must(t, env.Client.Status().Update(ctx, w))
			snapshot := get(t, w)

			other := get(t, w)
			flipped := metav1.NewTime(time.Now().Add(-30 * time.Minute).Truncate(time.Second))
			if tc.ahead {
				flipped = metav1.NewTime(time.Now().Add(time.Minute).Truncate(time.Second))
			}
			conditions.Set(other, metav1.Condition{Type: conditions.Ready, Status: metav1.ConditionFalse, Reason: "Broken", LastTransitionTime: flipped})
			must(t, env.Client.Status().Update(ctx, other))

			p, err := reconcile.NewPatcher(c, snapshot)
			must(t, err)
			tc.mark(snapshot)
			snapshot.Status.Phase = "Again"
			start := metav1.NewTime(time.Now().Truncate(time.Second))
			must(t, p.Patch(ctx, snapshot, tc.opts...))
			r := conditions.Get(get(t, w), conditions.Ready)
			if r.Status != metav1.ConditionTrue {
				t.Fatalf("Ready %+v: our True was not written", r)
			}
			if r.LastTransitionTime.Before(&start) || r.LastTransitionTime.Before(&flipped) {
				t.Errorf("Ready flipped False -> True with lastTransitionTime %s, before the write (%s) or the live False (%s)",
					r.LastTransitionTime, start, flipped)
			}
		})
	}
}

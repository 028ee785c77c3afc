package ownership_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
)

// staleAfterGet is a client whose first Get is followed, before the caller
// goes on, by another writer's change: the read the caller holds is stale,
// as a lagging cache's read is, deterministically.
func staleAfterGet(t *testing.T, other func(ctx context.Context, key client.ObjectKey)) client.Client {
	t.Helper()
	var once sync.Once
	return interceptor.NewClient(watchClient(t), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			once.Do(func() { other(ctx, key) })
			return nil
		},
	})
}

// TestAnotherWritersStatusSurvivesAStaleRead: CreateOrPatch changes spec
// and status of a child whose status another controller changed after our
// read. The other controller's status fields and conditions must survive
// (or the call is a conflict to requeue on); never silently erased.
func TestAnotherWritersStatusSurvivesAStaleRead(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	now := metav1.Now()
	theirs := metav1.Condition{Type: "Theirs", Status: metav1.ConditionTrue, Reason: "R", Message: "m", LastTransitionTime: now}
	ours := metav1.Condition{Type: "Ours", Status: metav1.ConditionFalse, Reason: "R", Message: "m", LastTransitionTime: now}
	oursNow := metav1.Condition{Type: "Ours", Status: metav1.ConditionTrue, Reason: "R", Message: "m", LastTransitionTime: now}
	for i, tc := range []struct {
		name       string
		specChange bool
		mutate     func(w *testapi.Widget)
	}{
		{"spec and scalar status change", true, func(w *testapi.Widget) { w.Status.Replicas = 3 }},
		{"spec and condition change", true, func(w *testapi.Widget) { meta.SetStatusCondition(&w.Status.Conditions, oursNow) }},
		{"condition change only", false, func(w *testapi.Widget) { meta.SetStatusCondition(&w.Status.Conditions, oursNow) }},
		{"our only condition removed", false, func(w *testapi.Widget) { meta.RemoveStatusCondition(&w.Status.Conditions, "Ours") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("w-%d", i)
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			if _, err := ownership.CreateOrPatch(ctx, env.Client, o, w, func() error {
				w.Spec.Size = 1
				meta.SetStatusCondition(&w.Status.Conditions, ours)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			c := staleAfterGet(t, func(ctx context.Context, key client.ObjectKey) {
				var other testapi.Widget
				if err := env.Client.Get(ctx, key, &other); err != nil {
					t.Error(err)
					return
				}
				other.Status.Phase = "Running"
				meta.SetStatusCondition(&other.Status.Conditions, theirs)
				if err := env.Client.Status().Update(ctx, &other); err != nil {
					t.Error(err)
				}
			})
			_, errs := requeue(t, func() (controllerutil.OperationResult, error) {
				w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				return ownership.CreateOrPatch(ctx, c, o, w, func() error {
					if tc.specChange {
						w.Spec.Size = 2
					}
					tc.mutate(w)
					return nil
				})
			})
			for _, err := range errs {
				t.Logf("requeued on: %v", err)
				if !apierrors.IsConflict(err) {
					t.Errorf("failed with %v, want a conflict to requeue on", err)
				}
			}
			var got testapi.Widget
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), &got); err != nil {
				t.Fatal(err)
			}
			if got.Status.Phase != "Running" || meta.FindStatusCondition(got.Status.Conditions, "Theirs") == nil {
				t.Errorf("the other writer's status is lost: %+v", got.Status)
			}
		})
	}
}

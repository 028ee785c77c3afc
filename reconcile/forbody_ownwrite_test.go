package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// TestForBodyPatcherOfAChildReadsItsOwnWrites: For given the manager's
// own client (no memory) keeps one of its own, which its context carries
// for the body's calls. The body patches a child through a Patcher of that
// same client, each reconcile counting one more in the child's size: the
// second reconcile, at once, reads the child from the lagging cache,
// older than the first one's write. Its Patch must refuse that copy (a
// *StaleError, nothing written), as a Patcher of steady.NewClient does,
// and as it did before For's own memory recorded only the object For
// reconciles: written from it, the first reconcile's count is lost (size 1
// written again, not 2).
func TestForBodyPatcherOfAChildReadsItsOwnWrites(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 500 * time.Millisecond, Informers: []client.Object{&testapi.Widget{}}})
	ns := env.Namespace(t)
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	child := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child"}}
	must(t, env.Client.Create(ctx, owner))
	must(t, env.Client.Create(ctx, child))
	waitCached(t, cc.Client, owner, owner.ResourceVersion)
	waitCached(t, cc.Client, child, child.ResourceVersion)

	plain := cc.Manager.GetClient()
	var patchErr error
	r, err := reconcile.For(plain, func(ctx context.Context, _ *testapi.Widget) (ctrl.Result, error) {
		c := &testapi.Widget{}
		if err := plain.Get(ctx, client.ObjectKeyFromObject(child), c); err != nil {
			return ctrl.Result{}, err
		}
		p, err := reconcile.NewPatcher(plain, c)
		if err != nil {
			return ctrl.Result{}, err
		}
		c.Spec.Size++
		patchErr = p.Patch(ctx, c)
		return ctrl.Result{}, nil
	})
	must(t, err)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(owner)}
	if _, err := r.Reconcile(ctx, req); err != nil || patchErr != nil {
		t.Fatalf("first reconcile: %v, its Patch: %v", err, patchErr)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	var se *reconcile.StaleError
	got := get(t, child)
	if !errors.As(patchErr, &se) || got.Spec.Size != 1 {
		t.Errorf("the second reconcile's Patch of the child, from a copy older than the first's write: %v; stored size %d, counted 2 (want a *StaleError, size 1 as the first wrote it)", patchErr, got.Spec.Size)
	}
}

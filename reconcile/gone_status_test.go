package reconcile_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// A status write to an object that is gone (deleted after the read, which a
// lagging cache still shows: a controller reconciles an owner while the
// garbage collector deletes its children) is answered 404. Where the kind
// is known to have a status subresource (a status write through the same
// steady client succeeded), that 404 says gone, and the Patch ends there, in
// one request, instead of sending status again to the object itself as for
// a kind without a status subresource.
func TestStatusWriteToAGoneObjectIsOneRequest(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	direct, n, err := testapi.NewCountingClient(env.Config, env.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	c := testapi.Remembering(direct, env.Scheme)

	// A first status write through c: the kind has a status subresource.
	first := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "first"}}
	if err := env.Client.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	first = get(t, first)
	p, err := reconcile.NewPatcher(c, first)
	if err != nil {
		t.Fatal(err)
	}
	conditions.MarkTrue(first, "Mine", "Set", "")
	if err := p.Patch(ctx, first); err != nil {
		t.Fatal(err)
	}

	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	stale := get(t, w)
	if err := env.Client.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	n.Reset()
	p, err = reconcile.NewPatcher(c, stale)
	if err != nil {
		t.Fatal(err)
	}
	conditions.MarkTrue(stale, "Mine", "Set", "")
	if err := p.Patch(ctx, stale); err != nil {
		t.Fatalf("Patch = %v, want nil (the object is gone)", err)
	}
	if got := n.Get("PATCH"); got != 1 {
		t.Errorf("a status write to a gone object cost %s, want PATCH=1", n)
	}
}

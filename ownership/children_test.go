package ownership_test

import (
	"context"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/steadyk8s/steady/indexer"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
)

func TestListChildren(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	a, b := owner(t, ns, "a"), owner(t, ns, "b")
	for i, o := range []*testapi.Widget{a, a, b} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: string(rune('x' + i))}}
		if _, err := ownership.CreateOrUpdate(ctx, remembering(), o, cm, nil); err != nil {
			t.Fatal(err)
		}
	}
	// A child of an earlier owner named a, since deleted: not a's.
	stale := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stale", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: testapi.GroupVersion.String(), Kind: "Widget", Name: "a", UID: "old-uid", Controller: new(true)}}}}
	if err := env.Client.Create(ctx, stale); err != nil {
		t.Fatal(err)
	}
	names := func(c client.Client) []string {
		var list corev1.ConfigMapList
		if err := ownership.ListChildren(ctx, c, a, &list); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, i := range list.Items {
			out = append(out, i.Name)
		}
		sort.Strings(out)
		return out
	}
	if got := names(env.Client); len(got) != 2 || got[0] != "x" || got[1] != "y" {
		t.Errorf("children through a direct client (list and filter) = %v", got)
	}

	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := indexer.ControllerOwner[*corev1.ConfigMap]().Register(ctx, mgr.GetFieldIndexer()); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- mgr.Start(mctx) }()
	defer func() { cancel(); <-done }()
	mgr.GetCache().WaitForCacheSync(mctx)
	deadline := time.Now().Add(10 * time.Second)
	for got := names(mgr.GetClient()); len(got) != 2 || got[0] != "x" || got[1] != "y"; got = names(mgr.GetClient()) {
		if time.Now().After(deadline) {
			t.Fatalf("children through the cache index = %v", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestListChildrenOnADirectClient: a client without the index lists and
// filters, with two LISTs on every call: the indexed one, which its API
// server rejects (nothing remembers that), then the plain one.
func TestListChildrenOnADirectClient(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	a := owner(t, ns, "a")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}}
	if _, err := ownership.CreateOrUpdate(ctx, c, a, cm, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		n.Reset()
		var list corev1.ConfigMapList
		if err := ownership.ListChildren(ctx, c, a, &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 {
			t.Errorf("call %d: %d children, want 1", i, len(list.Items))
		}
		if n.Get("LIST") != 2 {
			t.Errorf("call %d: requests %s, want LIST=2", i, n)
		}
	}
}

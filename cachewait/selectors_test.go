package cachewait_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/cachewait"
	"github.com/steadyk8s/steady/testenv"
)

// TestWriteOutsideTheCachedNamespaces: with a cache limited to some
// namespaces, a write through the Client in another one (writes go to the
// API server) must not make every later cluster-wide List fail (the bug:
// the wait read the cache for that object, which errs, and kept the
// expectation, so each List returned the error).
func TestWriteOutsideTheCachedNamespaces(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cached, other := env.Namespace(t), env.Namespace(t)
	mgr := env.StartManager(t, testenv.WithManagerOptions(ctrl.Options{Cache: cache.Options{
		DefaultNamespaces: map[string]cache.Config{cached: {}}}}))
	if _, err := mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{}); err != nil { // a warm cache
		t.Fatal(err)
	}
	c := cachewait.NewClient(mgr, cachewait.WithTimeout(3*time.Second))
	must(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "elsewhere"}}))
	in := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cached, Name: "here"}}
	must(t, c.Create(ctx, in))
	for i := range 2 {
		var list corev1.ConfigMapList
		if err := c.List(ctx, &list); err != nil {
			t.Fatalf("cluster-wide List %d: %v", i, err)
		}
		found := false
		for _, cm := range list.Items {
			found = found || cm.Name == "here"
		}
		if !found {
			t.Errorf("List %d lacks the object written in the cached namespace", i)
		}
	}
}

// startScoped starts a manager whose cache opts limit, lagging as
// startManager's, and returns it and its request counter.
func startScoped(t *testing.T, opts cache.Options) (ctrl.Manager, *testenv.RequestCounter) {
	t.Helper()
	n := &testenv.RequestCounter{}
	mgr := env.StartManager(t, testenv.WithManagerOptions(ctrl.Options{Cache: opts}),
		testenv.WithTransport(n.Wrap), testenv.WithTransport(testenv.DelayWatches(lag)))
	if _, err := mgr.GetCache().GetInformer(t.Context(), &corev1.ConfigMap{}); err != nil { // a warm cache
		t.Fatal(err)
	}
	return mgr, n
}

var managed = map[string]string{"managed": "yes"}

// names returns the names of list's items.
func names(list *corev1.ConfigMapList) []string {
	var n []string
	for _, item := range list.Items {
		n = append(n, item.Name)
	}
	return n
}

// TestListSelectorThatCannotMatchDoesNotWait: with a cache limited by a
// label selector, an object written outside it is never in the cache; a
// List whose own label selector or namespace cannot match it must not wait
// for it (the bug: every List of the kind waited the whole timeout and
// failed), yet waits for what it can match.
func TestListSelectorThatCannotMatchDoesNotWait(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	mgr, n := startScoped(t, cache.Options{DefaultLabelSelector: labels.SelectorFromSet(managed)})
	noTimeouts(t)
	ns := env.Namespace(t)
	c := cachewait.NewClient(mgr, cachewait.WithTimeout(3*time.Second))
	must(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "outside",
		Labels: map[string]string{"app": "a"}}}))
	must(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "inside",
		Labels: map[string]string{"managed": "yes", "app": "a"}}}))
	n.Reset()
	for _, sel := range []client.MatchingLabels{managed, {"managed": "yes", "app": "a"}} {
		var list corev1.ConfigMapList
		must(t, c.List(ctx, &list, client.InNamespace(ns), sel))
		if got := names(&list); !slices.Equal(got, []string{"inside"}) {
			t.Errorf("List %v: %v, want [inside]", sel, got)
		}
	}
	must(t, c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(env.Namespace(t))))
	if n.Get("GET")+n.Get("LIST") != 0 {
		t.Errorf("requests: %s, want no read of the API server", n)
	}
}

// TestListWaitsForWhatTheCacheStillShows: a write that takes an object out
// of a List's label selector (a label removed, a delete) is waited for
// while the cache still shows it inside: the List must not show it as it
// was (the bug this guards: judging by the written labels alone).
func TestListWaitsForWhatTheCacheStillShows(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	noTimeouts(t)
	app := client.MatchingLabels{"app": "a"}
	for _, tc := range []struct {
		name  string
		write func(c client.Client, cm *corev1.ConfigMap) error
	}{
		{"relabelled", func(c client.Client, cm *corev1.ConfigMap) error {
			base := cm.DeepCopy()
			cm.Labels = map[string]string{"app": "b"}
			return c.Patch(ctx, cm, client.MergeFrom(base))
		}},
		{"deleted", func(c client.Client, cm *corev1.ConfigMap) error { return c.Delete(ctx, cm) }},
		{"deleted by name", func(c client.Client, cm *corev1.ConfigMap) error {
			return c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cm.Namespace, Name: cm.Name}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			c := cachewait.NewClient(cc.Manager, cachewait.WithTimeout(3*time.Second))
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "leaving", Labels: app}}
			must(t, env.Client.Create(ctx, cm))
			must(t, cachewait.ForWrite(ctx, cc.Client, cm))
			must(t, tc.write(c, cm))
			var list corev1.ConfigMapList
			must(t, cc.Manager.GetClient().List(ctx, &list, client.InNamespace(ns), app))
			if len(list.Items) != 1 {
				t.Fatalf("the cache caught up at once: %v; the test proves nothing", names(&list))
			}
			must(t, c.List(ctx, &list, client.InNamespace(ns), app))
			if len(list.Items) != 0 {
				t.Errorf("List app=a after the write: %v, want none", names(&list))
			}
		})
	}
}

// TestWriteOutsideTheCacheIsNotWaitedFor: with WithCacheOptions, a write
// the cache cannot hold (outside its label selector, by default, for the
// kind, or in a namespace) is not waited for by any read, nor costs a
// request (the bug: the cache answered NotFound, a live GET found it, and
// every read of it and List of the kind waited the whole timeout); a write
// it can hold is waited for as ever.
func TestWriteOutsideTheCacheIsNotWaitedFor(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	sel := labels.SelectorFromSet(managed)
	for _, tc := range []struct {
		name string
		opts func(ns string) cache.Options
	}{
		{"DefaultLabelSelector", func(string) cache.Options { return cache.Options{DefaultLabelSelector: sel} }},
		{"ByObject Label", func(string) cache.Options {
			return cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {Label: sel}}}
		}},
		{"namespace LabelSelector", func(ns string) cache.Options {
			return cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {LabelSelector: sel}, cache.AllNamespaces: {}}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noTimeouts(t)
			ns := env.Namespace(t)
			opts := tc.opts(ns)
			mgr, n := startScoped(t, opts)
			c := cachewait.NewClient(mgr, cachewait.WithCacheOptions(opts), cachewait.WithTimeout(3*time.Second))
			n.Reset()
			outside := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "outside"}}
			must(t, c.Create(ctx, outside))
			if err := c.Get(ctx, client.ObjectKeyFromObject(outside), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
				t.Errorf("Get of the write outside the cache: %v, want NotFound", err)
			}
			must(t, c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns)))
			must(t, c.List(ctx, &corev1.ConfigMapList{}))
			inside := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "inside", Labels: managed}}
			must(t, c.Create(ctx, inside))
			var list corev1.ConfigMapList
			must(t, c.List(ctx, &list, client.InNamespace(ns)))
			if got := names(&list); !slices.Equal(got, []string{"inside"}) {
				t.Errorf("List: %v, want [inside]", got)
			}
			if n.Get("GET")+n.Get("LIST") != 0 {
				t.Errorf("requests: %s, want no read of the API server", n)
			}
		})
	}
}

// TestWriteTakingAnObjectOutOfTheCacheWaits: with WithCacheOptions, a
// write that takes an object the cache holds out of its selector is
// waited for until the cache drops the object: a List must not show it as
// it was (the bug this guards: "outside the cache, never waited for").
func TestWriteTakingAnObjectOutOfTheCacheWaits(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	opts := cache.Options{DefaultLabelSelector: labels.SelectorFromSet(managed)}
	mgr, _ := startScoped(t, opts)
	noTimeouts(t)
	ns := env.Namespace(t)
	c := cachewait.NewClient(mgr, cachewait.WithCacheOptions(opts), cachewait.WithTimeout(3*time.Second))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "leaving", Labels: managed}}
	must(t, env.Client.Create(ctx, cm))
	must(t, cachewait.ForWrite(ctx, mgr.GetClient(), cm))
	base := cm.DeepCopy()
	cm.Labels = nil
	must(t, c.Patch(ctx, cm, client.MergeFrom(base)))
	var list corev1.ConfigMapList
	must(t, mgr.GetClient().List(ctx, &list, client.InNamespace(ns)))
	if len(list.Items) != 1 {
		t.Fatal("the cache dropped the object at once; the test proves nothing")
	}
	must(t, c.List(ctx, &list, client.InNamespace(ns)))
	if len(list.Items) != 0 {
		t.Errorf("List after the write that left the cache: %v, want none", names(&list))
	}
}

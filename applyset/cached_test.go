package applyset_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/applyset"
	"github.com/steadyk8s/steady/internal/testapi"
)

// TestManagersClient drives a Set built on a manager's client, whose cache
// lags 300ms: applyset reads only unstructured objects, which that client
// reads from the API server, so back-to-back applies see their own writes
// and start no informer.
func TestManagersClient(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 300 * time.Millisecond, Informers: []client.Object{&testapi.Widget{}}})
	ns := env.Namespace(t)
	parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}}
	set, err := applyset.New(cc.Client, parent)
	if err != nil {
		t.Fatal(err)
	}
	watches := cc.Counter.Get("WATCH")
	for i, step := range []struct {
		yaml            string
		applied, pruned int
		kinds           string
		present, gone   []string
	}{
		{cm("a") + cm("b") + secret("s"), 3, 0, "ConfigMap,Secret", []string{"a", "b"}, nil},
		{cm("a"), 0, 2, "ConfigMap", []string{"a"}, []string{"b"}},
		{cm("a", "  labels: {v: \"2\"}\n") + cm("b"), 2, 0, "ConfigMap", []string{"a", "b"}, nil},
		{cm("b"), 0, 1, "ConfigMap", []string{"b"}, []string{"a"}},
	} {
		res, err := set.Apply(ctx, parse(t, step.yaml))
		if err != nil || res.Count(applyset.Applied) != step.applied || res.Count(applyset.Pruned) != step.pruned {
			t.Fatalf("step %d: %+v, %v", i, res.Objects, err)
		}
		if got := parentKinds(t, parent); got != step.kinds {
			t.Errorf("step %d: parent kinds %q, want %q", i, got, step.kinds)
		}
		for _, name := range step.present {
			if !exists(t, configMap(ns, name)) {
				t.Errorf("step %d: %s missing", i, name)
			}
		}
		for _, name := range step.gone {
			if exists(t, configMap(ns, name)) {
				t.Errorf("step %d: %s not pruned", i, name)
			}
		}
	}
	if got := cc.Counter.Get("WATCH"); got != watches {
		t.Errorf("applyset started %d informers in the manager's cache", got-watches)
	}
}

// TestClientCachingUnstructuredIsRefused: a client that reads unstructured
// objects from the (lagging) cache could show a stale parent and stale
// members; it is refused with ErrCachedClient before anything is written.
func TestClientCachingUnstructuredIsRefused(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 300 * time.Millisecond})
	c, err := client.New(env.Config, client.Options{Scheme: env.Scheme, Cache: &client.CacheOptions{Reader: cc.Manager.GetCache(), Unstructured: true}})
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}}
	set, _ := applyset.New(c, parent)
	_, err = set.Apply(ctx, parse(t, cm("a")))
	if !errors.Is(err, applyset.ErrCachedClient) {
		t.Fatalf("apply with a client caching unstructured objects: %v", err)
	}
	if exists(t, parent) || exists(t, configMap(ns, "a")) {
		t.Error("a refused client wrote")
	}
}

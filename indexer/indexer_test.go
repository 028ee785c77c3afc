package indexer_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/steadyk8s/steady/indexer"
	"github.com/steadyk8s/steady/internal/testapi"
)

var env = testapi.NewEnv()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// TenantsByNamespace is the Capsule example: tenants by status.namespaces.
var TenantsByNamespace = indexer.StringSlice[*testapi.Widget]("status.namespaces", "status", "namespaces")

// startManager registers the indexes and starts a manager whose cached
// client the tests query.
func startManager(t testing.TB, register func(ctrl.Manager) error) client.Client {
	t.Helper()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := register(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	return mgr.GetClient()
}

func names[T client.Object](objs []T) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	sort.Strings(out)
	return out
}

// eventually polls find until it returns want, for up to ten seconds.
func eventually(t *testing.T, want []string, find func() ([]string, error)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := find()
		if err != nil {
			t.Fatal(err)
		}
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %v, want %v", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestIndexesThroughAManager(t *testing.T) {
	ctx := context.Background()
	children := indexer.ControllerOwner[*corev1.ConfigMap]()
	c := startManager(t, func(mgr ctrl.Manager) error {
		for _, reg := range []func() error{
			func() error { return children.Register(ctx, mgr.GetFieldIndexer()) },
			// A second controller registering the same declarations: no-ops.
			func() error { return indexer.ControllerOwner[*corev1.ConfigMap]().Register(ctx, mgr.GetFieldIndexer()) },
			func() error { return TenantsByNamespace.Register(ctx, mgr.GetFieldIndexer()) },
			func() error { return TenantsByNamespace.Register(ctx, mgr.GetFieldIndexer()) },
		} {
			if err := reg(); err != nil {
				return err
			}
		}
		other := indexer.StringSlice[*testapi.Widget]("status.namespaces", "spec", "owner")
		var ce *indexer.ConflictError
		if err := other.Register(ctx, mgr.GetFieldIndexer()); !errors.As(err, &ce) {
			t.Errorf("a different declaration under the same name: %v, want *ConflictError", err)
		}
		return nil
	})

	ns := env.Namespace(t)
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	stranger := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stranger"}}
	for _, w := range []*testapi.Widget{owner, stranger} {
		if err := env.Client.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	for i, o := range []*testapi.Widget{owner, owner, stranger, nil} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: string(rune('a' + i))}}
		if o != nil {
			cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: testapi.GroupVersion.String(), Kind: "Widget", Name: o.Name, UID: o.UID, Controller: new(true)}}
		}
		if err := env.Client.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	key := indexer.OwnerKey(schema.GroupKind{Group: testapi.GroupVersion.Group, Kind: "Widget"}, "owner")
	if key != "Widget.test.steady.dev/owner" {
		t.Errorf("OwnerKey = %s", key)
	}
	eventually(t, []string{"a", "b"}, func() ([]string, error) {
		got, err := children.Find(ctx, c, env.Scheme, key, client.InNamespace(ns))
		return names(got), err
	})

	owner.Status.Namespaces = []string{"team-a", "team-b"}
	stranger.Status.Namespaces = []string{"team-b"}
	for _, w := range []*testapi.Widget{owner, stranger} {
		if err := env.Client.Status().Update(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, []string{"owner", "stranger"}, func() ([]string, error) {
		got, err := TenantsByNamespace.Find(ctx, c, env.Scheme, "team-b")
		return names(got), err
	})
	eventually(t, []string{"owner"}, func() ([]string, error) {
		got, err := TenantsByNamespace.Find(ctx, c, env.Scheme, "team-a")
		return names(got), err
	})

	never := indexer.New("never.registered", func(*corev1.ConfigMap) []string { return nil })
	var nre *indexer.NotRegisteredError
	if _, err := never.Find(ctx, c, env.Scheme, "x"); !errors.As(err, &nre) || nre.Index != "never.registered" {
		t.Errorf("an unregistered index: %v, want *NotRegisteredError", err)
	}
	if _, err := children.Find(ctx, env.Client, env.Scheme, key); !errors.As(err, &nre) {
		t.Errorf("an index queried on a direct client: %v, want *NotRegisteredError", err)
	}
}

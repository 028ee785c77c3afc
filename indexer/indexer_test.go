package indexer_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
var TenantsByNamespace = indexer.New("status.namespaces", func(w *testapi.Widget) []string { return w.Status.Namespaces })

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
	env.Require(t)
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
		other := indexer.New("status.namespaces", func(w *testapi.Widget) []string { return []string{w.Spec.Owner} })
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
		got, err := TenantsByNamespace.Find(ctx, c, env.Scheme, "team-b", client.InNamespace(ns))
		return names(got), err
	})
	eventually(t, []string{"owner"}, func() ([]string, error) {
		got, err := TenantsByNamespace.Find(ctx, c, env.Scheme, "team-a", client.InNamespace(ns))
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

// TestRegistrationAcrossManagers creates, uses and stops several managers
// in one binary, collecting garbage in between so that a new cache may land
// where an old one was: each one gets the index, re-registering the same
// declaration is harmless and a different one is a conflict, every time,
// also one under ControllerOwner's name registered before it (the name is
// reserved: the index that then works is ControllerOwner's).
func TestRegistrationAcrossManagers(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	children := indexer.ControllerOwner[*corev1.ConfigMap]()
	other := indexer.New(indexer.ControllerOwnerIndex, func(*corev1.ConfigMap) []string { return nil })
	ns := env.Namespace(t)
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	if err := env.Client.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: testapi.GroupVersion.String(), Kind: "Widget", Name: "owner", UID: owner.UID, Controller: new(true)}}}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	key := indexer.OwnerKey(schema.GroupKind{Group: testapi.GroupVersion.Group, Kind: "Widget"}, "owner")
	for i := 0; i < 8; i++ {
		t.Run(fmt.Sprintf("manager %d", i), func(t *testing.T) {
			c := startManager(t, func(mgr ctrl.Manager) error {
				var ce *indexer.ConflictError
				if err := other.Register(ctx, mgr.GetFieldIndexer()); !errors.As(err, &ce) {
					t.Errorf("another declaration under ControllerOwner's name, first: %v, want *ConflictError", err)
				}
				if err := children.Register(ctx, mgr.GetFieldIndexer()); err != nil {
					return fmt.Errorf("first registration: %w", err)
				}
				if err := children.Register(ctx, mgr.GetFieldIndexer()); err != nil {
					return fmt.Errorf("the same declaration again: %w", err)
				}
				if err := indexer.RegisterControllerOwner(ctx, mgr.GetFieldIndexer(), &corev1.ConfigMap{}); err != nil {
					return fmt.Errorf("the same declaration from an object: %w", err)
				}
				if err := other.Register(ctx, mgr.GetFieldIndexer()); !errors.As(err, &ce) {
					t.Errorf("another declaration under the same name: %v, want *ConflictError", err)
				}
				if err := indexer.RegisterControllerOwner(ctx, mgr.GetFieldIndexer(), &corev1.Secret{}); err != nil {
					return fmt.Errorf("the controller-owner index of another kind, from an object: %w", err)
				}
				if err := indexer.ControllerOwner[*corev1.Secret]().Register(ctx, mgr.GetFieldIndexer()); err != nil {
					return fmt.Errorf("that index again through ControllerOwner: %w", err)
				}
				return nil
			})
			eventually(t, []string{"child"}, func() ([]string, error) {
				got, err := children.Find(ctx, c, env.Scheme, key, client.InNamespace(ns))
				return names(got), err
			})
		})
		runtime.GC()
		runtime.GC()
	}
}

// TestIndexedListsOnAReaderWithoutTheIndex: a direct client is asked for
// the index on every call, and every call is a *NotRegisteredError naming
// the index and type around the API server's refusal: nothing is
// remembered of the reader.
func TestIndexedListsOnAReaderWithoutTheIndex(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n, err := testapi.NewCountingClient(env.Config, env.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	children := indexer.ControllerOwner[*corev1.ConfigMap]()
	for i := 0; i < 3; i++ {
		n.Reset()
		_, err := children.Find(ctx, c, env.Scheme, "Widget.test.steady.dev/x")
		var nre *indexer.NotRegisteredError
		if !errors.As(err, &nre) || nre.Index != indexer.ControllerOwnerIndex || nre.Type != "*v1.ConfigMap" || !apierrors.IsBadRequest(err) {
			t.Fatalf("call %d: %v, want *NotRegisteredError for %s of *v1.ConfigMap around a BadRequest", i, err, indexer.ControllerOwnerIndex)
		}
		if n.Get("LIST") != 1 {
			t.Errorf("call %d: requests %s, want LIST=1", i, n)
		}
	}
}

// TestFindTakesAReader: the manager's cache, a plain client.Reader, is
// queried with the scheme given; a nil scheme takes a client's own.
func TestFindTakesAReader(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	children := indexer.ControllerOwner[*corev1.ConfigMap]()
	var cache client.Reader
	c := startManager(t, func(mgr ctrl.Manager) error {
		cache = mgr.GetCache()
		return children.Register(ctx, mgr.GetFieldIndexer())
	})
	ns := env.Namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-web", Controller: new(true)}}}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	key := indexer.OwnerKey(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web")
	eventually(t, []string{"child"}, func() ([]string, error) {
		got, err := children.Find(ctx, cache, env.Scheme, key, client.InNamespace(ns))
		return names(got), err
	})
	eventually(t, []string{"child"}, func() ([]string, error) {
		got, err := children.Find(ctx, c, nil, key, client.InNamespace(ns))
		return names(got), err
	})
	if _, err := children.Find(ctx, cache, nil, key); err == nil {
		t.Error("a reader without a scheme and no scheme given: no error")
	}
}

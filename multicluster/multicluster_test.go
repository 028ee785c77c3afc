package multicluster_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/steadyk8s/steady/indexer"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/multicluster"
	"github.com/steadyk8s/steady/multicluster/fleettest"
	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/testenv"
)

// fleet is the package's two control planes.
var fleet = testenv.NewFleet(2)

func TestMain(m *testing.M) { os.Exit(fleet.Run(m)) }

const timeout = 60 * time.Second

// startFleetManager runs a multicluster manager over the fleet's members,
// with setup registering the controllers; counters count each member's
// requests through its cluster.
func startFleetManager(t *testing.T, setup func(mcmanager.Manager) error) (*fleettest.Provider, []*testenv.RequestCounter) {
	t.Helper()
	fleet.Require(t)
	counters := make([]*testenv.RequestCounter, len(fleet.Members))
	for i := range counters {
		counters[i] = &testenv.RequestCounter{}
	}
	p := fleettest.NewProvider(fleet, fleettest.WithTransport(func(i int, rt http.RoundTripper) http.RoundTripper {
		return counters[i].Wrap(rt)
	}))
	mgr, err := mcmanager.New(fleet.Members[0].Config, p, mcmanager.Options{
		Scheme:     fleet.Members[0].Scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := setup(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("manager: %v", err)
		}
	})
	return p, counters
}

var seq atomic.Int32

// ownerLabel marks the ConfigMaps the test controller reconciles.
const ownerLabel = "fleet.steady.dev/owner"

// TestForReconcilesEachClusterWithItsOwnClient runs one steady reconciler
// over two clusters holding an owner of the same namespace and name: each
// owner gets its cluster's name and a child controlled by that owner (its
// UID, not the other cluster's), and at rest no cluster sees a write.
func TestForReconcilesEachClusterWithItsOwnClient(t *testing.T) {
	fleet.Require(t)
	ctx := context.Background()
	ns := fmt.Sprintf("same-%d", seq.Add(1))
	var calls [2]atomic.Int32
	children := indexer.ControllerOwner[*rbacv1.RoleBinding]()
	p, counters := startFleetManager(t, func(mgr mcmanager.Manager) error {
		// Registered twice (two controllers would), on every cluster.
		for range 2 {
			if err := children.Register(ctx, multicluster.FieldIndexer(mgr)); err != nil {
				return err
			}
		}
		other := indexer.New(indexer.ControllerOwner[*rbacv1.RoleBinding]().Name(), func(*rbacv1.RoleBinding) []string { return nil })
		if err := other.Register(ctx, multicluster.FieldIndexer(mgr)); err == nil || !strings.Contains(err.Error(), "another index") {
			return fmt.Errorf("another index under ControllerOwner's name: %v, want it refused", err)
		}
		r, err := multicluster.For[corev1.ConfigMap](mgr, func(ctx context.Context, c multicluster.Cluster, cm *corev1.ConfigMap) (ctrl.Result, error) {
			i, _ := fleettest.Member(c.Name)
			calls[i].Add(1)
			if from, ok := multicluster.ClusterFrom(ctx); !ok || from.Name != c.Name {
				return ctrl.Result{}, fmt.Errorf("ClusterFrom = %v, %v; want %s", from.Name, ok, c.Name)
			}
			cm.Data = map[string]string{"cluster": string(c.Name)}
			rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: cm.Namespace, Name: cm.Name}}
			_, err := ownership.CreateOrUpdate(ctx, c.GetClient(), cm, rb, func() error {
				rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}
				// No APIGroup: the API server defaults it, so that only a
				// default differs and ownership remembers a verdict.
				rb.Subjects = []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "alice"}}
				return nil
			})
			if err != nil {
				return ctrl.Result{}, err
			}
			// The index, in this cluster's cache.
			found, err := children.Find(ctx, c.GetClient(), nil, indexer.OwnerKey(schema.GroupKind{Kind: "ConfigMap"}, cm.Name))
			cm.Data["children"] = strconv.Itoa(len(found))
			return ctrl.Result{}, err
		})
		if err != nil {
			return err
		}
		return mcbuilder.ControllerManagedBy(mgr).Named("owner").
			For(&corev1.ConfigMap{}, mcbuilder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
				return o.GetLabels()[ownerLabel] == "true" && o.GetNamespace() == ns
			}))).
			Complete(r)
	})
	owners := ownersIn(t, ns, map[string]string{ownerLabel: "true"})
	if owners[0].UID == owners[1].UID {
		t.Fatal("the owners have the same UID")
	}
	if err := p.Join(ctx, 0, 1); err != nil {
		t.Fatal(err)
	}
	for i, e := range fleet.Members {
		testenv.Eventually(t, "member "+strconv.Itoa(i)+" converges", func() error {
			cm := &corev1.ConfigMap{}
			if err := e.Client.Get(ctx, client.ObjectKeyFromObject(owners[i]), cm); err != nil {
				return err
			}
			if got, want := cm.Data["cluster"], string(fleettest.Name(i)); got != want {
				return fmt.Errorf("owner holds cluster %q, want %q", got, want)
			}
			if got := cm.Data["children"]; got != "1" {
				return fmt.Errorf("the index of this cluster found %q children, want 1", got)
			}
			rb := &rbacv1.RoleBinding{}
			if err := e.Client.Get(ctx, client.ObjectKeyFromObject(owners[i]), rb); err != nil {
				return err
			}
			if ref := metav1.GetControllerOf(rb); ref == nil || ref.UID != owners[i].UID {
				return fmt.Errorf("child controlled by %v, want the owner of this member (%s)", ref, owners[i].UID)
			}
			return nil
		}, timeout)
	}
	// At rest: no write in either cluster. A reconcile of each (a change
	// the body does not care about) writes nothing either.
	testenv.WaitIdle(t, "owner")
	for _, c := range counters {
		c.Reset()
	}
	before := [2]int32{calls[0].Load(), calls[1].Load()}
	for i, e := range fleet.Members {
		cm := owners[i].DeepCopy()
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
			t.Fatal(err)
		}
		cm.Annotations = map[string]string{"poke": "1"}
		if err := e.Client.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	for i := range fleet.Members {
		testenv.Eventually(t, "member "+strconv.Itoa(i)+" reconciled again", func() error {
			if calls[i].Load() == before[i] {
				return errors.New("not yet")
			}
			return nil
		}, timeout)
	}
	testenv.WaitIdle(t, "owner")
	for i, c := range counters {
		if w := c.Writes(); w != 0 {
			t.Errorf("member %d: %d writes at rest (%s), want 0", i, w, c)
		}
		// Same-named children in two clusters have entries of their own
		// in ownership's verdict memory (keyed by cluster): no request.
		t.Logf("member %d: a reconcile at rest cost %s", i, c)
	}
}

// TestSameNameAndResourceVersionInTwoClusters makes a child of the same
// namespace, name and resourceVersion in two clusters, with different
// content: ownership remembers, for the first cluster's child, that only a
// default differs; the second cluster's child must still be updated. A
// memory keyed by name and resourceVersion alone would skip it.
func TestSameNameAndResourceVersionInTwoClusters(t *testing.T) {
	fleet.Require(t)
	ctx := context.Background()
	a, b := fleet.Members[0], fleet.Members[1]
	ns := fmt.Sprintf("same-rv-%d", seq.Add(1))
	owners := ownersIn(t, ns, nil)
	// The children: alice in a (what the owner wants, less a default),
	// bob in b, at the same resourceVersion.
	children := sameResourceVersion(t, ctx, ns, owners, [2]string{"alice", "bob"})
	mutate := func(rb *rbacv1.RoleBinding) func() error {
		return func() error {
			rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}
			rb.Subjects = []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "alice"}}
			return nil
		}
	}
	counter := &testenv.RequestCounter{}
	ca, err := client.New(wrapped(a, counter), client.Options{Scheme: a.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	// Each cluster's client remembers, as steady.NewClient's does: apart.
	ca = testapi.Remembering(ca, a.Scheme)
	cb := testapi.Remembering(b.Client, b.Scheme)
	rbA := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child"}}
	if op, err := ownership.CreateOrUpdate(ctx, ca, owners[0], rbA, mutate(rbA)); err != nil || op != "unchanged" {
		t.Fatalf("cluster a: %v, %v; want unchanged (only a default differs)", op, err)
	}
	if counter.Get("PUT") != 1 || rbA.ResourceVersion != children[0].ResourceVersion {
		t.Fatalf("cluster a: %s, resourceVersion %s; want one update the server stores nothing of (resourceVersion %s)", counter, rbA.ResourceVersion, children[0].ResourceVersion)
	}
	counter.Reset()
	if op, err := ownership.CreateOrUpdate(ctx, ca, owners[0], rbA, mutate(rbA)); err != nil || op != "unchanged" || counter.Writes() != 0 {
		t.Fatalf("cluster a again: %v, %v, %s; want unchanged without a write (the verdict is remembered)", op, err, counter)
	}
	rbB := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child"}}
	op, err := ownership.CreateOrUpdate(ctx, cb, owners[1], rbB, mutate(rbB))
	if err != nil {
		t.Fatal(err)
	}
	got := &rbacv1.RoleBinding{}
	if err := b.Client.Get(ctx, client.ObjectKeyFromObject(children[1]), got); err != nil {
		t.Fatal(err)
	}
	if op != "updated" || len(got.Subjects) != 1 || got.Subjects[0].Name != "alice" {
		t.Errorf("cluster b: %v, subjects %v; want updated to alice (cluster a's verdict on the same name and resourceVersion must not count)", op, got.Subjects)
	}
}

// sameResourceVersion creates a RoleBinding "child" in namespace ns of
// both members, controlled by each member's owner and binding user
// subjects[i], at the same resourceVersion in both (trying again until the
// two stores' revisions line up).
func sameResourceVersion(t *testing.T, ctx context.Context, ns string, owners []*corev1.ConfigMap, subjects [2]string) [2]*rbacv1.RoleBinding {
	t.Helper()
	envs := fleet.Members[:2]
	for attempt := 0; attempt < 30; attempt++ {
		// Bring the lower store's revision up to the higher one's.
		var revs [2]int
		for i, e := range envs {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "pump-"}}
			if err := e.Client.Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
			revs[i], _ = strconv.Atoi(cm.ResourceVersion)
		}
		lo := 0
		if revs[1] < revs[0] {
			lo = 1
		}
		for n := revs[1-lo] - revs[lo]; n > 0; n-- {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "pump-"}}
			if err := envs[lo].Client.Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
		}
		var out [2]*rbacv1.RoleBinding
		for i, e := range envs {
			out[i] = &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child",
					Labels: map[string]string{ownership.OwnerKindLabel: "ConfigMap", ownership.OwnerNameLabel: owners[i].Name},
					OwnerReferences: []metav1.OwnerReference{{
						APIVersion: "v1", Kind: "ConfigMap", Name: owners[i].Name, UID: owners[i].UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: subjects[i]}},
			}
			if err := e.Client.Create(ctx, out[i]); err != nil {
				t.Fatal(err)
			}
		}
		if out[0].ResourceVersion == out[1].ResourceVersion && out[0].UID != out[1].UID {
			t.Logf("child at resourceVersion %s in both clusters (attempt %d)", out[0].ResourceVersion, attempt+1)
			return out
		}
		for i, e := range envs {
			if err := e.Client.Delete(ctx, out[i]); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
	}
	t.Fatal("the two stores' revisions never lined up")
	return [2]*rbacv1.RoleBinding{}
}

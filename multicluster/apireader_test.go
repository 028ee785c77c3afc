package multicluster_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/steadyk8s/steady/multicluster"
	"github.com/steadyk8s/steady/multicluster/fleettest"
	"github.com/steadyk8s/steady/ownership"
)

// TestForReadsEachClusterThroughItsOwnAPIReader: review of reconcile.For
// handing its API reader to the body's ownership calls. multicluster.For
// gives each cluster's For steady.NewClient of that cluster, whose API
// reader the body's ownership calls with the cluster's client read
// through: never another cluster's. Here member 1's child carries the
// controller reference of an earlier owner of the same name (recorded on
// it): CreateOrUpdate checks that the owner it was given is the live one
// before it replaces that reference. Read through member 0's API reader
// (or the host's), it would find member 0's owner, another UID, and
// refuse, in every reconcile: member 1 would never converge.
func TestForReadsEachClusterThroughItsOwnAPIReader(t *testing.T) {
	fleet.Require(t)
	ctx := context.Background()
	ns := fmt.Sprintf("own-reader-%d", seq.Add(1))
	var mu sync.Mutex
	lastErr := map[int]error{}
	p, _ := startFleetManager(t, func(mgr mcmanager.Manager) error {
		r, err := multicluster.For[corev1.ConfigMap](mgr, func(ctx context.Context, c multicluster.Cluster, cm *corev1.ConfigMap) (ctrl.Result, error) {
			rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: cm.Namespace, Name: cm.Name}}
			_, err := ownership.CreateOrUpdate(ctx, c.GetClient(), cm, rb, func() error {
				rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}
				rb.Subjects = []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}
				return nil
			})
			i, _ := fleettest.Member(c.Name)
			mu.Lock()
			lastErr[i] = err
			mu.Unlock()
			return ctrl.Result{}, err
		})
		if err != nil {
			return err
		}
		return mcbuilder.ControllerManagedBy(mgr).Named("own-reader").
			For(&corev1.ConfigMap{}, mcbuilder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
				return o.GetNamespace() == ns && o.GetName() == "owner"
			}))).
			Complete(r)
	})
	owners := ownersIn(t, ns, nil)
	// The children go when the test ends: other tests count the children
	// of ConfigMaps named "owner" in every namespace.
	t.Cleanup(func() {
		for i, e := range fleet.Members[:2] {
			_ = e.Client.Delete(context.Background(), owners[i])
			_ = e.Client.DeleteAllOf(context.Background(), &rbacv1.RoleBinding{}, client.InNamespace(ns))
		}
	})
	// Member 1's child, controlled by an earlier owner of the same name.
	stale := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner",
		Labels: map[string]string{ownership.OwnerKindLabel: "ConfigMap", ownership.OwnerNameLabel: "owner"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner",
			UID: "an-earlier-owner", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}
	if err := fleet.Members[1].Client.Create(ctx, stale); err != nil {
		t.Fatal(err)
	}
	if err := p.Join(ctx, 0, 1); err != nil {
		t.Fatal(err)
	}
	for i, e := range fleet.Members[:2] {
		deadline := time.Now().Add(20 * time.Second)
		for {
			rb := &rbacv1.RoleBinding{}
			err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "owner"}, rb)
			ref := metav1.GetControllerOf(rb)
			if err == nil && ref != nil && ref.UID == owners[i].UID {
				break
			}
			if time.Now().After(deadline) {
				mu.Lock()
				last := lastErr[i]
				mu.Unlock()
				t.Fatalf("member %d: the child is controlled by %v, want its owner (UID %s); the last reconcile: %v", i, ref, owners[i].UID, last)
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("member %s: the child is its owner's", strconv.Itoa(i))
	}
}

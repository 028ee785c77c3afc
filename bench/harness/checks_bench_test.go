package harness

import (
	"fmt"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	benchv1 "github.com/steadyk8s/steady/bench/api/v1alpha1"
	"github.com/steadyk8s/steady/bench/operator"
)

// convergedCluster is n converged Teams with their children, as the
// operator leaves them.
func convergedCluster(n int) (*runner, *cluster) {
	r := &runner{tampered: map[types.NamespacedName]uint64{}}
	c := &cluster{}
	controller := true
	for i := range n {
		name := fmt.Sprintf("team-%04d", i)
		r.names = append(r.names, name)
		rv := func(kind int) string { return strconv.Itoa(10*i + kind) }
		t := benchv1.Team{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv(0), Generation: 1,
				Labels: map[string]string{benchv1.VariantLabel: "steady"}, Finalizers: []string{benchv1.Finalizer}},
			Spec: benchv1.TeamSpec{Members: []string{name + "-lead", name + "-dev", name + "-ops"}},
		}
		t.Status.ObservedGeneration = 1
		for _, typ := range []string{benchv1.ChildrenReady, benchv1.Ready} {
			meta.SetStatusCondition(&t.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: operator.ReasonSucceeded})
		}
		child := func(kind int) metav1.ObjectMeta {
			return metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv(kind),
				OwnerReferences: []metav1.OwnerReference{{Kind: "Team", Name: name, UID: t.UID, Controller: &controller}}}
		}
		cm, sa, rb := corev1.ConfigMap{ObjectMeta: child(1)}, corev1.ServiceAccount{ObjectMeta: child(2)}, rbacv1.RoleBinding{ObjectMeta: child(3)}
		operator.MutateConfigMap(&t, &cm)
		operator.MutateServiceAccount(&t, &sa)
		operator.MutateRoleBinding(&t, &rb)
		c.teams = append(c.teams, t)
		c.cms.Items = append(c.cms.Items, cm)
		c.sas.Items = append(c.sas.Items, sa)
		c.rbs.Items = append(c.rbs.Items, rb)
	}
	return r, c
}

// BenchmarkConvergedPoll is one poll of the convergence check of 1000
// converged Teams: from lists, in full (as verify) and with the Teams
// remembered (lists aside), and from a mirror (as a phase), with nothing
// changed since the last poll and with every Team changed; and, apart,
// what the cache's four Lists cost a poll that lists (without copies, the
// items are still set into new slices).
func BenchmarkConvergedPoll(b *testing.B) {
	r, c := convergedCluster(1000)
	check := r.check(false)
	for _, memo := range []bool{false, true} {
		b.Run(fmt.Sprintf("remembered=%v", memo), func(b *testing.B) {
			var v *verdicts
			if memo {
				v = &verdicts{}
				v.reset(false)
			}
			b.ReportAllocs()
			for b.Loop() {
				batch := fromLists(c.teams, &c.cms, &c.sas, &c.rbs)
				judge(batch, v, check)
				if n, first := pendingOf(batch); n != 0 {
					b.Fatalf("%d pending, first: %s", n, first)
				}
			}
		})
	}
	for _, changed := range []bool{false, true} {
		b.Run(fmt.Sprintf("mirror,changed=%v", changed), func(b *testing.B) {
			r.mirror = newMirror(len(r.names))
			c.feed(r.mirror)
			r.resetChecks(false)
			if why := r.watchedConverged(false); why != "" { // every Team checked once
				b.Fatal(why)
			}
			b.ReportAllocs()
			for b.Loop() {
				if changed {
					r.mirror.markAll()
				}
				if why := r.watchedConverged(false); why != "" {
					b.Fatal(why)
				}
			}
		})
	}
	// What a cache's List without copies costs on top: setting 4 x 1000
	// items into new lists.
	b.Run("lists", func(b *testing.B) {
		var objs [4][]kruntime.Object
		for i := range c.teams {
			objs[0] = append(objs[0], &c.teams[i])
			objs[1] = append(objs[1], &c.cms.Items[i])
			objs[2] = append(objs[2], &c.sas.Items[i])
			objs[3] = append(objs[3], &c.rbs.Items[i])
		}
		b.ReportAllocs()
		for b.Loop() {
			for k, l := range []kruntime.Object{&benchv1.TeamList{}, &corev1.ConfigMapList{}, &corev1.ServiceAccountList{}, &rbacv1.RoleBindingList{}} {
				if err := meta.SetList(l, objs[k]); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkMirrorEvent is what the mirror's handler costs an informer per
// event: an update of a ConfigMap of 1000 Teams.
func BenchmarkMirrorEvent(b *testing.B) {
	_, c := convergedCluster(1000)
	m := newMirror(1000)
	c.feed(m)
	h := toolscache.ResourceEventHandler(m.handler(kindConfigMap))
	b.ReportAllocs()
	var batch []teamObjs
	i := 0
	for b.Loop() {
		cm := &c.cms.Items[i%1000]
		h.OnUpdate(cm, cm)
		i++
		if i%1000 == 0 {
			batch, _, _ = m.take(1000, nil, batch[:0]) // as the polls do
			clear(batch)
		}
	}
}

package harness

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/steadyk8s/steady/bench/api/v1alpha1"
)

// feed hands every object of c to m's handlers, as an informer's first
// list does.
func (c *cluster) feed(m *mirror) {
	for i := range c.teams {
		m.handler(kindTeam).OnAdd(&c.teams[i], true)
		m.handler(kindConfigMap).OnAdd(&c.cms.Items[i], true)
		m.handler(kindServiceAccount).OnAdd(&c.sas.Items[i], true)
		m.handler(kindRoleBinding).OnAdd(&c.rbs.Items[i], true)
	}
}

// world is what a manager's cache holds, by kind and name, written as the
// API server and an informer do: every write a new object with a new
// resourceVersion, handed to the mirror's handlers, never modified later.
type world struct {
	t     *testing.T
	r     *runner
	tmpl  [4]map[string]client.Object // converged objects, by kind and name
	objs  [4]map[string]client.Object // the cache's
	names []string
	rv    atomic.Int64
}

// newWorld is n converged Teams with their children, all in the mirror,
// and the namespace's own ConfigMap (kube-root-ca.crt) and
// ServiceAccount (default), which belong to no Team.
func newWorld(t *testing.T, n int) *world {
	r, c := convergedCluster(n)
	r.mirror = newMirror(n)
	w := &world{t: t, r: r, names: r.names}
	w.rv.Store(1000000)
	for kind := range 4 {
		w.tmpl[kind] = map[string]client.Object{}
		w.objs[kind] = map[string]client.Object{}
	}
	for i := range c.teams {
		w.tmpl[kindTeam][c.teams[i].Name] = &c.teams[i]
		w.tmpl[kindConfigMap][c.cms.Items[i].Name] = &c.cms.Items[i]
		w.tmpl[kindServiceAccount][c.sas.Items[i].Name] = &c.sas.Items[i]
		w.tmpl[kindRoleBinding][c.rbs.Items[i].Name] = &c.rbs.Items[i]
	}
	w.tmpl[kindConfigMap]["kube-root-ca.crt"] = &corev1.ConfigMap{}
	w.tmpl[kindServiceAccount]["default"] = &corev1.ServiceAccount{}
	for kind := range 4 {
		for _, name := range slices.Sorted(maps.Keys(w.tmpl[kind])) {
			w.write(kind, name, nil)
		}
	}
	r.resetChecks(false)
	return w
}

// write makes the object of kind and name anew, from the cache's (or the
// converged one), changed by mutate (nil: unchanged but for its
// resourceVersion).
func (w *world) write(kind int, name string, mutate func(client.Object)) {
	old := w.objs[kind][name]
	base := old
	if base == nil {
		base = w.tmpl[kind][name]
	}
	obj := base.DeepCopyObject().(client.Object)
	obj.SetNamespace("ns")
	obj.SetName(name)
	if mutate != nil {
		mutate(obj)
	}
	obj.SetResourceVersion(strconv.FormatInt(w.rv.Add(1), 10))
	w.objs[kind][name] = obj
	if old == nil {
		w.r.mirror.handler(kind).OnAdd(obj, false)
	} else {
		w.r.mirror.handler(kind).OnUpdate(old, obj)
	}
}

// Ways the informer hands a deletion over.
const (
	deleted          = iota
	tombstone        // the last known state in a DeletedFinalStateUnknown
	tombstoneKeyOnly // a DeletedFinalStateUnknown without the object
)

// del deletes the object of kind and name, handing it over how.
func (w *world) del(kind int, name string, how int) {
	old := w.objs[kind][name]
	if old == nil {
		return
	}
	delete(w.objs[kind], name)
	h := w.r.mirror.handler(kind)
	switch how {
	case deleted:
		h.OnDelete(old)
	case tombstone:
		h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/" + name, Obj: old})
	case tombstoneKeyOnly:
		h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/" + name})
	}
}

// lists are the cache's objects as Lists return them (copies).
func (w *world) lists() ([]benchv1.Team, *corev1.ConfigMapList, *corev1.ServiceAccountList, *rbacv1.RoleBindingList) {
	var (
		teams []benchv1.Team
		cms   corev1.ConfigMapList
		sas   corev1.ServiceAccountList
		rbs   rbacv1.RoleBindingList
	)
	for kind, objs := range w.objs {
		// In no particular order, as a cache lists.
		for _, obj := range objs {
			switch o := obj.(type) {
			case *benchv1.Team:
				teams = append(teams, *o)
			case *corev1.ConfigMap:
				cms.Items = append(cms.Items, *o)
			case *corev1.ServiceAccount:
				sas.Items = append(sas.Items, *o)
			case *rbacv1.RoleBinding:
				rbs.Items = append(rbs.Items, *o)
			default:
				w.t.Fatalf("kind %d: %T", kind, obj)
			}
		}
	}
	return teams, &cms, &sas, &rbs
}

// expect polls the mirror as a phase does, compares the answer with the
// full List-based checks (converged, gone) of the cache's objects, and
// with the Teams checked if want is not nil.
func (w *world) expect(step string, touched bool, want ...string) {
	w.t.Helper()
	var checked []string
	check := w.r.check(touched)
	got := w.r.pollMirror(touched, func(o *teamObjs) string {
		checked = append(checked, o.team.Name)
		return check(o)
	})
	teams, cms, sas, rbs := w.lists()
	if full := w.r.convergedIn(teams, cms, sas, rbs, touched); got != full {
		w.t.Errorf("%s: the mirror says %q, the full check %q", step, got, full)
	}
	if got, full := w.r.watchedGone(), goneIn(teams, cms, sas, rbs); got != full {
		w.t.Errorf("%s: gone: the mirror says %q, the full check %q", step, got, full)
	}
	if want != nil {
		slices.Sort(checked)
		if !slices.Equal(checked, want) {
			w.t.Errorf("%s: checked %v, want %v", step, checked, want)
		}
	}
}

// none is no Team checked, for expect.
var none = []string{}

func unready(obj client.Object) { obj.(*benchv1.Team).Status.ObservedGeneration = 0 }
func ready(obj client.Object)   { obj.(*benchv1.Team).Status.ObservedGeneration = 1 }
func tamper(obj client.Object)  { obj.GetLabels()[benchv1.TeamLabel] = TamperedValue }
func orphan(obj client.Object)  { obj.SetOwnerReferences(nil) }
func touchTeam(obj client.Object) {
	obj.SetAnnotations(map[string]string{TouchedAnnotation: "1"})
}

// TestMirror checks the convergence and deletion checks from the mirror
// against the full checks of Lists, and that a poll checks only the Teams
// changed since the last poll (each once) and those still pending: the
// objects written, an update without a change (the verdict remembered),
// deletions, tombstones with and without the last state, a Team deleted
// and made again, the check's meaning changed.
func TestMirror(t *testing.T) {
	w := newWorld(t, 3)
	w.expect("first poll", false, "team-0000", "team-0001", "team-0002")
	w.expect("nothing changed", false, none...)

	w.write(kindConfigMap, "team-0001", nil)
	w.write(kindRoleBinding, "team-0001", nil)
	w.expect("team-0001's ConfigMap and RoleBinding written", false, "team-0001")
	w.expect("after team-0001's children written", false, none...)
	// An update handing over the object the mirror holds (a resync): a
	// change, but the resourceVersions are those of the verdict.
	cm := w.objs[kindConfigMap]["team-0002"]
	w.r.mirror.handler(kindConfigMap).OnUpdate(cm, cm)
	w.expect("team-0002's ConfigMap handed over again", false, none...)
	// The namespace's own ConfigMap is no Team's.
	w.write(kindConfigMap, "kube-root-ca.crt", nil)
	w.expect("kube-root-ca.crt written", false, none...)

	w.write(kindTeam, "team-0002", unready)
	w.expect("team-0002 not ready", false, "team-0002")
	w.expect("team-0002 still not ready", false, "team-0002")
	w.write(kindServiceAccount, "team-0000", tamper)
	w.expect("team-0000's ServiceAccount tampered", false, "team-0000", "team-0002")
	w.write(kindTeam, "team-0002", ready)
	w.write(kindServiceAccount, "team-0000", func(obj client.Object) { obj.GetLabels()[benchv1.TeamLabel] = "team-0000" })
	w.expect("both repaired", false, "team-0000", "team-0002")
	w.expect("both remembered", false, none...)

	// Deletions, however handed over.
	w.del(kindRoleBinding, "team-0000", deleted)
	w.expect("team-0000's RoleBinding deleted", false, "team-0000")
	w.del(kindServiceAccount, "team-0000", tombstone)
	w.expect("team-0000's ServiceAccount deleted, tombstone", false, "team-0000")
	w.del(kindConfigMap, "team-0000", tombstoneKeyOnly)
	w.expect("team-0000's ConfigMap deleted, tombstone without the object", false, "team-0000")
	w.write(kindServiceAccount, "team-0001", orphan)
	w.expect("team-0001's ServiceAccount orphaned", false, "team-0000", "team-0001")
	w.del(kindTeam, "team-0000", tombstoneKeyOnly)
	w.expect("team-0000 deleted", false, none...)
	w.expect("team-0000 still deleted", false, none...)
	for kind := range 4 {
		w.write(kind, "team-0000", nil)
	}
	w.expect("team-0000 made again", false, "team-0000", "team-0001")
	w.write(kindServiceAccount, "team-0001", func(obj client.Object) {
		obj.SetOwnerReferences(w.tmpl[kindServiceAccount]["team-0001"].GetOwnerReferences())
	})
	w.expect("team-0001's ServiceAccount owned again", false, "team-0001")
	w.expect("all remembered", false, none...)

	// The check's meaning changes: every Team checked again.
	w.expect("touched", true, "team-0000", "team-0001", "team-0002")
	for _, name := range w.names {
		w.write(kindTeam, name, touchTeam)
	}
	w.expect("Teams touched", true, "team-0000", "team-0001", "team-0002")
	w.expect("touched, nothing changed", true, none...)
	w.expect("not touched", false, "team-0000", "team-0001", "team-0002")

	// The deletion phase.
	for _, name := range w.names {
		w.del(kindTeam, name, deleted)
	}
	w.expect("Teams deleted", false, none...)
	for kind := kindConfigMap; kind <= kindRoleBinding; kind++ {
		for _, name := range w.names {
			how := deleted
			if name == "team-0001" {
				how = tombstone
			}
			w.del(kind, name, how)
		}
	}
	if why := w.r.watchedGone(); why != "" {
		t.Errorf("all deleted: %s", why)
	}
	w.expect("all deleted", false, none...)
}

// TestMirrorRandom writes and deletes random objects in random ways,
// changes the check's meaning at random (touched, the tampered versions,
// as the touch phase does), and compares every poll of the mirror with
// the full checks.
func TestMirrorRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	w := newWorld(t, 30)
	touched := false
	for step := range 400 {
		for range rng.IntN(12) {
			w.randomWrite(rng, rng.IntN(4))
		}
		if rng.IntN(40) == 0 {
			touched = !touched
			if touched && rng.IntN(2) == 0 {
				for kind, k := range [...]string{kindConfigMap: "ConfigMap", kindServiceAccount: "ServiceAccount", kindRoleBinding: "RoleBinding"} {
					if k == "" {
						continue
					}
					for name, obj := range w.objs[kind] {
						w.r.tampered[childKey(k, name)] = rv(obj)
					}
				}
				w.r.resetChecks(true)
			}
		}
		w.expect(fmt.Sprintf("step %d", step), touched)
	}
}

// randomWrite writes, deletes or makes again an object of kind.
func (w *world) randomWrite(rng *rand.Rand, kind int) {
	name := w.names[rng.IntN(len(w.names))]
	if w.objs[kind][name] == nil {
		w.write(kind, name, nil)
		return
	}
	switch rng.IntN(8) {
	case 0:
		w.del(kind, name, rng.IntN(3))
	case 1:
		w.write(kind, name, nil)
	default:
		w.write(kind, name, func(obj client.Object) {
			switch {
			case kind == kindTeam:
				obj.(*benchv1.Team).Status.ObservedGeneration = int64(rng.IntN(2))
				if rng.IntN(2) == 0 {
					touchTeam(obj)
				}
			case rng.IntN(2) == 0:
				tamper(obj)
			case rng.IntN(2) == 0:
				orphan(obj)
			default:
				obj.SetOwnerReferences(w.tmpl[kind][name].GetOwnerReferences())
				obj.GetLabels()[benchv1.TeamLabel] = name
			}
		})
	}
}

// TestMirrorConcurrent writes the four kinds on four goroutines, as four
// informers deliver their events, while polling, and compares the last
// poll with the full checks (run with -race).
func TestMirrorConcurrent(t *testing.T) {
	w := newWorld(t, 50)
	var wg sync.WaitGroup
	var done atomic.Int32
	for kind := range 4 {
		rng := rand.New(rand.NewPCG(uint64(kind), 5))
		wg.Go(func() {
			defer done.Add(1)
			for range 2000 {
				w.randomWrite(rng, kind)
			}
		})
	}
	polls := 0
	for done.Load() < 4 {
		w.r.watchedConverged(false)
		w.r.watchedGone()
		polls++
	}
	wg.Wait()
	t.Logf("%d polls while writing", polls)
	w.expect("after the writes", false)
	// The counts are those of the objects.
	teams, children := w.r.mirror.left()
	want := len(w.objs[kindTeam])
	owned := 0
	for kind := kindConfigMap; kind <= kindRoleBinding; kind++ {
		for _, obj := range w.objs[kind] {
			owned += b2i(teamControlled(obj))
		}
	}
	if teams != want || children != owned {
		t.Errorf("the mirror holds %d Teams and %d owned children, the cache %d and %d", teams, children, want, owned)
	}
}

// TestPendingOfFirstByName checks that the first reason is that of the
// first pending Team by name, not by place.
func TestPendingOfFirstByName(t *testing.T) {
	batch := []teamObjs{
		{team: &benchv1.Team{}, why: ""},
		{team: &benchv1.Team{}, why: "c"},
		{team: &benchv1.Team{}, why: "a"},
		{team: &benchv1.Team{}, why: "b"},
	}
	for i, n := range []string{"t0", "t3", "t1", "t2"} {
		batch[i].team.Name = n
	}
	if n, first := pendingOf(batch); n != 3 || first != "a" {
		t.Errorf("pendingOf: %d, %q; want 3, \"a\"", n, first)
	}
}

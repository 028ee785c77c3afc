package harness

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchv1 "github.com/steadyk8s/steady/bench/api/v1alpha1"
)

// cluster is one poll's Teams and children, as a cache would list them.
type cluster struct {
	teams []benchv1.Team
	cms   corev1.ConfigMapList
	sas   corev1.ServiceAccountList
	rbs   rbacv1.RoleBindingList
}

func newCluster(names ...string) *cluster {
	c := &cluster{}
	for i, n := range names {
		meta := func(kind int) metav1.ObjectMeta {
			return metav1.ObjectMeta{Name: n, ResourceVersion: strconv.Itoa(100*i + kind)}
		}
		c.teams = append(c.teams, benchv1.Team{ObjectMeta: meta(0)})
		c.cms.Items = append(c.cms.Items, corev1.ConfigMap{ObjectMeta: meta(1)})
		c.sas.Items = append(c.sas.Items, corev1.ServiceAccount{ObjectMeta: meta(2)})
		c.rbs.Items = append(c.rbs.Items, rbacv1.RoleBinding{ObjectMeta: meta(3)})
	}
	return c
}

// meta returns the metadata of the object of kind (0 Team, 1 ConfigMap,
// 2 ServiceAccount, 3 RoleBinding) of the i-th Team.
func (c *cluster) meta(i, kind int) *metav1.ObjectMeta {
	return [...]*metav1.ObjectMeta{&c.teams[i].ObjectMeta, &c.cms.Items[i].ObjectMeta, &c.sas.Items[i].ObjectMeta, &c.rbs.Items[i].ObjectMeta}[kind]
}

// bump writes the object of kind of the i-th Team: a new resourceVersion.
func (c *cluster) bump(i, kind int) {
	m := c.meta(i, kind)
	v, _ := strconv.Atoi(m.ResourceVersion)
	m.ResourceVersion = strconv.Itoa(v + 10000)
}

// poll judges c as converged does, with v (nil: in full), and returns the
// answer and the Teams check was called for.
func (c *cluster) poll(v *verdicts, pending map[string]bool) (n int, first string, checked []string) {
	batch := fromLists(c.teams, &c.cms, &c.sas, &c.rbs)
	judge(batch, v, func(o *teamObjs) string {
		checked = append(checked, o.team.Name)
		if pending[o.team.Name] || o.cm == nil || o.sa == nil || o.rb == nil {
			return "Team " + o.team.Name + ": pending"
		}
		return ""
	})
	n, first = pendingOf(batch)
	return n, first, checked
}

// TestVerdicts checks the memory of the convergence checks: a converged
// Team is not checked again while its four resourceVersions are unchanged,
// is checked again when any of them changes or a child goes missing, a
// pending Team is checked at every poll, and the answer is the full
// check's.
func TestVerdicts(t *testing.T) {
	c := newCluster("team-a", "team-b", "team-c")
	pending := map[string]bool{"team-c": true}
	var v verdicts
	v.reset(false)
	expect := func(step string, wantChecked ...string) {
		t.Helper()
		n, first, checked := c.poll(&v, pending)
		if !slices.Equal(checked, wantChecked) {
			t.Errorf("%s: checked %v, want %v", step, checked, wantChecked)
		}
		fullN, fullFirst, _ := c.poll(nil, pending)
		if n != fullN || first != fullFirst {
			t.Errorf("%s: %d pending, first %q; the full check says %d, first %q", step, n, first, fullN, fullFirst)
		}
	}
	expect("first poll", "team-a", "team-b", "team-c")
	expect("nothing changed", "team-c")
	for kind, what := range []string{"Team", "ConfigMap", "ServiceAccount", "RoleBinding"} {
		c.bump(0, kind)
		expect("team-a's "+what+" written", "team-a", "team-c")
		expect("after team-a's "+what+" written", "team-c")
	}
	// The same resourceVersions under another Team's name are not its
	// verdict: team-b, pending, with team-a's four.
	saved := make([]string, 4)
	for kind := range 4 {
		saved[kind] = c.meta(1, kind).ResourceVersion
		c.meta(1, kind).ResourceVersion = c.meta(0, kind).ResourceVersion
	}
	pending["team-b"] = true
	expect("team-b pending with team-a's resourceVersions", "team-b", "team-c")
	for kind := range 4 {
		c.meta(1, kind).ResourceVersion = saved[kind]
	}
	pending["team-b"] = false
	expect("team-b back", "team-b", "team-c")

	// The cache lists in any order.
	slices.Reverse(c.teams)
	expect("Teams listed in reverse", "team-c")
	slices.Reverse(c.teams)

	// A converged Team that a write makes pending is pending until checked
	// converged again.
	pending["team-a"] = true
	c.bump(0, 2)
	expect("team-a pending", "team-a", "team-c")
	expect("team-a still pending", "team-a", "team-c")
	pending["team-a"] = false
	c.bump(0, 2)
	expect("team-a converged again", "team-a", "team-c")
	expect("team-a remembered again", "team-c")

	// A missing child: checked (and pending), whatever was remembered.
	rb := c.rbs.Items[1]
	c.rbs.Items = slices.Delete(c.rbs.Items, 1, 2)
	expect("team-b's RoleBinding missing", "team-b", "team-c")
	c.rbs.Items = append(c.rbs.Items, rb)
	expect("team-b's RoleBinding back", "team-b", "team-c")
	expect("team-b remembered", "team-c")

	// A new phase, or a check of another meaning, forgets.
	v.reset(false)
	expect("after reset", "team-a", "team-b", "team-c")
	v.reset(true)
	if len(v.ok) != 0 || !v.touched {
		t.Errorf("reset(true) kept %d verdicts of a check without touched", len(v.ok))
	}
}

// TestVerdictsRandom writes random objects and flips random verdicts (a
// verdict is a function of the objects, as teamPending's is), and compares
// every poll with the memory to the full check.
func TestVerdictsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := make([]string, 50)
	for i := range names {
		names[i] = fmt.Sprintf("team-%02d", i)
	}
	c := newCluster(names...)
	pending := map[string]bool{}
	var v verdicts
	v.reset(false)
	for poll := range 200 {
		for range rng.IntN(10) {
			i := rng.IntN(len(names))
			c.bump(i, rng.IntN(4))
			pending[names[i]] = rng.IntN(3) == 0 // only with a write, as a real verdict
		}
		n, first, _ := c.poll(&v, pending)
		fullN, fullFirst, _ := c.poll(nil, pending)
		if n != fullN || first != fullFirst {
			t.Fatalf("poll %d: %d pending, first %q; the full check says %d, first %q", poll, n, first, fullN, fullFirst)
		}
	}
}

package harness

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	benchv1 "github.com/steadyk8s/steady/bench/api/v1alpha1"
	"github.com/steadyk8s/steady/bench/operator"
)

// lists reads the Teams and children of the namespace (without copies from
// a cache).
func (r *runner) lists(ctx context.Context, rd client.Reader) (*benchv1.TeamList, *corev1.ConfigMapList, *corev1.ServiceAccountList, *rbacv1.RoleBindingList, error) {
	teams, cms, sas, rbs := &benchv1.TeamList{}, &corev1.ConfigMapList{}, &corev1.ServiceAccountList{}, &rbacv1.RoleBindingList{}
	opts := []client.ListOption{client.InNamespace(r.ns)}
	if _, direct := rd.(client.Client); !direct { // a cache: no copies
		opts = append(opts, client.UnsafeDisableDeepCopy)
	}
	for _, l := range []client.ObjectList{teams, cms, sas, rbs} {
		if err := rd.List(ctx, l, opts...); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	return teams, cms, sas, rbs, nil
}

// converged reports "" when all N Teams are Ready for their generation,
// with the finalizer and their three children as wanted, or what is not
// yet. With touched, every Team must show the touch annotation and every
// child a write newer than its tampering. It lists the Teams and children
// and checks every Team in full: the check after a phase (verify), which
// the machinery of the checks during a phase (mirror) cannot fool.
func (r *runner) converged(ctx context.Context, rd client.Reader, touched bool) (string, error) {
	teams, cms, sas, rbs, err := r.lists(ctx, rd)
	if err != nil {
		return "", err
	}
	return r.convergedIn(teams.Items, cms, sas, rbs, touched), nil
}

// convergedIn is converged of the Teams and children listed.
func (r *runner) convergedIn(teams []benchv1.Team, cms *corev1.ConfigMapList, sas *corev1.ServiceAccountList, rbs *rbacv1.RoleBindingList, touched bool) string {
	if len(teams) != len(r.names) {
		return fmt.Sprintf("%d of %d Teams exist", len(teams), len(r.names))
	}
	batch := fromLists(teams, cms, sas, rbs)
	judge(batch, nil, r.check(touched))
	return summarize(batch, len(teams))
}

// watchedConverged is converged as the mirror shows the manager's cache,
// checking only the Teams changed since the last poll and those still
// pending; the checks of a phase.
func (r *runner) watchedConverged(touched bool) string {
	return r.pollMirror(touched, r.check(touched))
}

// pollMirror is watchedConverged with check for teamPending.
func (r *runner) pollMirror(touched bool, check func(*teamObjs) string) string {
	if r.verdicts.ok == nil || r.verdicts.touched != touched {
		r.resetChecks(touched)
	}
	return r.poll.poll(r.mirror, len(r.names), &r.verdicts, check)
}

// resetChecks makes the next poll of the mirror check every Team again,
// with touched: at the start of a phase, and whenever the meaning of the
// check changes (touched, the tampered versions).
func (r *runner) resetChecks(touched bool) {
	r.verdicts.reset(touched)
	r.mirror.markAll()
	r.poll.reset()
}

// check is teamPending with touched.
func (r *runner) check(touched bool) func(*teamObjs) string {
	return func(o *teamObjs) string { return r.teamPending(o.team, o.cm, o.sa, o.rb, touched) }
}

// teamObjs are a Team and its children (nil: missing) as one check sees
// them (a child is named as its Team), and the check's verdict.
type teamObjs struct {
	team *benchv1.Team
	cm   *corev1.ConfigMap
	sa   *corev1.ServiceAccount
	rb   *rbacv1.RoleBinding
	// why is judge's verdict: "" converged, or what is pending.
	why string
	// entry is the mirror's entry a poll took the objects from.
	entry *mirrored
}

// fromLists pairs every Team of teams with its children in the lists.
func fromLists(teams []benchv1.Team, cms *corev1.ConfigMapList, sas *corev1.ServiceAccountList, rbs *rbacv1.RoleBindingList) []teamObjs {
	cm := make(map[string]*corev1.ConfigMap, len(cms.Items))
	for i := range cms.Items {
		cm[cms.Items[i].Name] = &cms.Items[i]
	}
	sa := make(map[string]*corev1.ServiceAccount, len(sas.Items))
	for i := range sas.Items {
		sa[sas.Items[i].Name] = &sas.Items[i]
	}
	rb := make(map[string]*rbacv1.RoleBinding, len(rbs.Items))
	for i := range rbs.Items {
		rb[rbs.Items[i].Name] = &rbs.Items[i]
	}
	out := make([]teamObjs, len(teams))
	for i := range teams {
		t := &teams[i]
		out[i] = teamObjs{team: t, cm: cm[t.Name], sa: sa[t.Name], rb: rb[t.Name]}
	}
	return out
}

// summarize returns "" when no Team of batch is pending, or how many of
// the total are and the reason of the first by name.
func summarize(batch []teamObjs, total int) string {
	n, first := pendingOf(batch)
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d Teams not converged; first: %s", n, total, first)
}

// pendingOf counts the Teams of batch judged pending, and returns the
// reason of the first by name.
func pendingOf(batch []teamObjs) (n int, first string) {
	var firstName string
	for i := range batch {
		o := &batch[i]
		if o.why == "" {
			continue
		}
		if n == 0 || o.team.Name < firstName {
			firstName, first = o.team.Name, o.why
		}
		n++
	}
	return n, first
}

// teamRVs are the resourceVersions of a Team, its ConfigMap, its
// ServiceAccount and its RoleBinding.
type teamRVs [4]string

// verdicts remembers, within one phase, the resourceVersions at which each
// Team was last found converged. Every change of a Team or of a child
// changes its resourceVersion, and the check depends on nothing else but
// touched and the runner's tampered versions, which are fixed while a
// phase waits: while the four resourceVersions are unchanged, so is the
// verdict. A pending Team is not remembered, and is checked again at the
// next poll. Reset at the start of every phase and whenever the meaning
// of the check changes (touched, the tampered versions).
type verdicts struct {
	touched bool
	ok      map[string]teamRVs // Team name -> where it was found converged
}

// reset forgets every verdict; the check is then one with touched.
func (v *verdicts) reset(touched bool) {
	v.touched = touched
	if v.ok == nil {
		v.ok = map[string]teamRVs{}
	}
	clear(v.ok)
}

// judge sets the verdict of check on every Team of batch. With v, a Team
// whose four resourceVersions are those at which v found it converged is
// not checked again (it is converged), a Team check finds converged is
// remembered, a pending one forgotten; a Team with a missing child is
// always checked.
func judge(batch []teamObjs, v *verdicts, check func(*teamObjs) string) {
	for i := range batch {
		o := &batch[i]
		var at teamRVs
		memo := v != nil && o.cm != nil && o.sa != nil && o.rb != nil
		if memo {
			at = teamRVs{o.team.ResourceVersion, o.cm.ResourceVersion, o.sa.ResourceVersion, o.rb.ResourceVersion}
			memo = at[0] != "" && at[1] != "" && at[2] != "" && at[3] != ""
		}
		if memo {
			if was, ok := v.ok[o.team.Name]; ok && was == at {
				o.why = ""
				continue
			}
		}
		o.why = check(o)
		switch {
		case o.why == "" && memo:
			v.ok[o.team.Name] = at
		case o.why != "" && v != nil:
			delete(v.ok, o.team.Name)
		}
	}
}

// teamPending reports "" when t and its children are as wanted, or what is
// not; it allocates only for a pending Team.
func (r *runner) teamPending(t *benchv1.Team, cm *corev1.ConfigMap, sa *corev1.ServiceAccount, rb *rbacv1.RoleBinding, touched bool) string {
	ready := meta.FindStatusCondition(t.Status.Conditions, benchv1.Ready)
	children := meta.FindStatusCondition(t.Status.Conditions, benchv1.ChildrenReady)
	switch {
	case !controllerutil.ContainsFinalizer(t, benchv1.Finalizer):
		return "Team " + t.Name + ": no finalizer"
	case t.Status.ObservedGeneration != t.Generation:
		return fmt.Sprintf("Team %s: observedGeneration %d, generation %d", t.Name, t.Status.ObservedGeneration, t.Generation)
	case ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != t.Generation:
		return fmt.Sprintf("Team %s: Ready is %v", t.Name, ready)
	case children == nil || children.Status != metav1.ConditionTrue || children.ObservedGeneration != t.Generation:
		return fmt.Sprintf("Team %s: ChildrenReady is %v", t.Name, children)
	case cm == nil || !operator.WantsConfigMap(t, cm):
		return "Team " + t.Name + ": ConfigMap missing or not as wanted"
	case sa == nil || !operator.WantsServiceAccount(t, sa):
		return "Team " + t.Name + ": ServiceAccount missing or not as wanted"
	case rb == nil || !operator.WantsRoleBinding(t, rb):
		return "Team " + t.Name + ": RoleBinding missing or not as wanted"
	}
	if !touched {
		return ""
	}
	if t.Annotations[TouchedAnnotation] == "" {
		return "Team " + t.Name + ": touch not seen yet"
	}
	for _, c := range [...]struct {
		kind string
		obj  client.Object
	}{{"ConfigMap", cm}, {"ServiceAccount", sa}, {"RoleBinding", rb}} {
		if rv(c.obj) <= r.tampered[childKey(c.kind, t.Name)] {
			return fmt.Sprintf("Team %s: %s not repaired since the tampering", t.Name, c.kind)
		}
	}
	return ""
}

// gone reports "" when no Team and no child of a Team is left, listing
// them; the check after the delete phase (verify).
func (r *runner) gone(ctx context.Context, rd client.Reader) (string, error) {
	teams, cms, sas, rbs, err := r.lists(ctx, rd)
	if err != nil {
		return "", err
	}
	return goneIn(teams.Items, cms, sas, rbs), nil
}

// goneIn is gone of the Teams and children listed.
func goneIn(teams []benchv1.Team, cms *corev1.ConfigMapList, sas *corev1.ServiceAccountList, rbs *rbacv1.RoleBindingList) string {
	left := 0
	for i := range cms.Items {
		left += b2i(teamControlled(&cms.Items[i]))
	}
	for i := range sas.Items {
		left += b2i(teamControlled(&sas.Items[i]))
	}
	for i := range rbs.Items {
		left += b2i(teamControlled(&rbs.Items[i]))
	}
	return goneWhy(len(teams), left)
}

// watchedGone is gone as the mirror shows the manager's cache; the checks
// of the delete phase.
func (r *runner) watchedGone() string {
	return goneWhy(r.mirror.left())
}

func goneWhy(teams, children int) string {
	if teams > 0 || children > 0 {
		return fmt.Sprintf("%d Teams and %d children left", teams, children)
	}
	return ""
}

// teamControlled reports whether obj has a Team as controller.
func teamControlled(obj client.Object) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Kind == "Team" && ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

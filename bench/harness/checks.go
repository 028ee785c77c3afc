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
// child a write newer than its tampering.
//
// With v, a Team that v found converged at its current four
// resourceVersions is not checked again (see verdicts); without it, every
// Team is checked in full. The answer is the same either way.
func (r *runner) converged(ctx context.Context, rd client.Reader, touched bool, v *verdicts) (string, error) {
	teams, cms, sas, rbs, err := r.lists(ctx, rd)
	if err != nil {
		return "", err
	}
	if len(teams.Items) != len(r.names) {
		return fmt.Sprintf("%d of %d Teams exist", len(teams.Items), len(r.names)), nil
	}
	kids := &children{}
	if v != nil {
		v.use(touched)
		kids = &v.kids // maps reused from poll to poll
	}
	kids.index(cms, sas, rbs)
	defer kids.clear() // hold no object of this poll until the next one
	pending, first := judge(teams.Items, kids, v, func(t *benchv1.Team, cm *corev1.ConfigMap, sa *corev1.ServiceAccount, rb *rbacv1.RoleBinding) string {
		return r.teamPending(t, cm, sa, rb, touched)
	})
	if pending > 0 {
		return fmt.Sprintf("%d of %d Teams not converged; first: %s", pending, len(teams.Items), first), nil
	}
	return "", nil
}

// children indexes the children of one poll by name (a child is named as
// its Team).
type children struct {
	cm map[string]*corev1.ConfigMap
	sa map[string]*corev1.ServiceAccount
	rb map[string]*rbacv1.RoleBinding
}

// index fills the maps with the items of the lists, making them only the
// first time: clear keeps their buckets for the next poll.
func (c *children) index(cms *corev1.ConfigMapList, sas *corev1.ServiceAccountList, rbs *rbacv1.RoleBindingList) {
	if c.cm == nil {
		c.cm = make(map[string]*corev1.ConfigMap, len(cms.Items))
		c.sa = make(map[string]*corev1.ServiceAccount, len(sas.Items))
		c.rb = make(map[string]*rbacv1.RoleBinding, len(rbs.Items))
	}
	for i := range cms.Items {
		c.cm[cms.Items[i].Name] = &cms.Items[i]
	}
	for i := range sas.Items {
		c.sa[sas.Items[i].Name] = &sas.Items[i]
	}
	for i := range rbs.Items {
		c.rb[rbs.Items[i].Name] = &rbs.Items[i]
	}
}

func (c *children) clear() {
	clear(c.cm)
	clear(c.sa)
	clear(c.rb)
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
	kids    children
}

// reset forgets every verdict; the check is then one with touched.
func (v *verdicts) reset(touched bool) {
	v.touched = touched
	clear(v.ok)
}

// use makes v one of a check with touched, forgetting every verdict if
// it was not.
func (v *verdicts) use(touched bool) {
	if v.ok == nil {
		v.ok = map[string]teamRVs{}
	}
	if v.touched != touched {
		v.reset(touched)
	}
}

// judge counts the Teams that check finds pending, with the reason of the
// first in the order of teams. With v, a Team whose four resourceVersions
// are those at which v found it converged is not checked again (it is
// converged), a Team check finds converged is remembered, a pending one
// forgotten; a Team with a missing child is always checked.
func judge(teams []benchv1.Team, kids *children, v *verdicts, check func(*benchv1.Team, *corev1.ConfigMap, *corev1.ServiceAccount, *rbacv1.RoleBinding) string) (pending int, first string) {
	for i := range teams {
		t := &teams[i]
		cm, sa, rb := kids.cm[t.Name], kids.sa[t.Name], kids.rb[t.Name]
		var at teamRVs
		memo := v != nil && cm != nil && sa != nil && rb != nil
		if memo {
			at = teamRVs{t.ResourceVersion, cm.ResourceVersion, sa.ResourceVersion, rb.ResourceVersion}
			memo = at[0] != "" && at[1] != "" && at[2] != "" && at[3] != ""
		}
		if memo {
			if was, ok := v.ok[t.Name]; ok && was == at {
				continue
			}
		}
		why := check(t, cm, sa, rb)
		if why == "" {
			if memo {
				v.ok[t.Name] = at
			}
			continue
		}
		if v != nil {
			delete(v.ok, t.Name)
		}
		pending++
		if first == "" {
			first = why
		}
	}
	return pending, first
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

// gone reports "" when no Team and no child of a Team is left.
func (r *runner) gone(ctx context.Context, rd client.Reader) (string, error) {
	teams, cms, sas, rbs, err := r.lists(ctx, rd)
	if err != nil {
		return "", err
	}
	left := 0
	for _, refs := range ownerRefs(cms, sas, rbs) {
		for _, ref := range refs {
			if ref.Kind == "Team" && ref.Controller != nil && *ref.Controller {
				left++
			}
		}
	}
	if n := len(teams.Items); n > 0 || left > 0 {
		return fmt.Sprintf("%d Teams and %d children left", n, left), nil
	}
	return "", nil
}

func ownerRefs(cms *corev1.ConfigMapList, sas *corev1.ServiceAccountList, rbs *rbacv1.RoleBindingList) [][]metav1.OwnerReference {
	var out [][]metav1.OwnerReference
	for i := range cms.Items {
		out = append(out, cms.Items[i].OwnerReferences)
	}
	for i := range sas.Items {
		out = append(out, sas.Items[i].OwnerReferences)
	}
	for i := range rbs.Items {
		out = append(out, rbs.Items[i].OwnerReferences)
	}
	return out
}

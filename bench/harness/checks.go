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
func (r *runner) converged(ctx context.Context, rd client.Reader, touched bool) (string, error) {
	teams, cms, sas, rbs, err := r.lists(ctx, rd)
	if err != nil {
		return "", err
	}
	if len(teams.Items) != len(r.names) {
		return fmt.Sprintf("%d of %d Teams exist", len(teams.Items), len(r.names)), nil
	}
	cm := map[string]*corev1.ConfigMap{}
	for i := range cms.Items {
		cm[cms.Items[i].Name] = &cms.Items[i]
	}
	sa := map[string]*corev1.ServiceAccount{}
	for i := range sas.Items {
		sa[sas.Items[i].Name] = &sas.Items[i]
	}
	rb := map[string]*rbacv1.RoleBinding{}
	for i := range rbs.Items {
		rb[rbs.Items[i].Name] = &rbs.Items[i]
	}
	pending := 0
	first := ""
	for i := range teams.Items {
		t := &teams.Items[i]
		why := r.teamPending(t, cm[t.Name], sa[t.Name], rb[t.Name], touched)
		if why != "" {
			pending++
			if first == "" {
				first = why
			}
		}
	}
	if pending > 0 {
		return fmt.Sprintf("%d of %d Teams not converged; first: %s", pending, len(teams.Items), first), nil
	}
	return "", nil
}

func (r *runner) teamPending(t *benchv1.Team, cm *corev1.ConfigMap, sa *corev1.ServiceAccount, rb *rbacv1.RoleBinding, touched bool) string {
	name := "Team " + t.Name
	ready := meta.FindStatusCondition(t.Status.Conditions, benchv1.Ready)
	children := meta.FindStatusCondition(t.Status.Conditions, benchv1.ChildrenReady)
	switch {
	case !controllerutil.ContainsFinalizer(t, benchv1.Finalizer):
		return name + ": no finalizer"
	case t.Status.ObservedGeneration != t.Generation:
		return fmt.Sprintf("%s: observedGeneration %d, generation %d", name, t.Status.ObservedGeneration, t.Generation)
	case ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != t.Generation:
		return fmt.Sprintf("%s: Ready is %v", name, ready)
	case children == nil || children.Status != metav1.ConditionTrue || children.ObservedGeneration != t.Generation:
		return fmt.Sprintf("%s: ChildrenReady is %v", name, children)
	case cm == nil || !operator.WantsConfigMap(t, cm):
		return name + ": ConfigMap missing or not as wanted"
	case sa == nil || !operator.WantsServiceAccount(t, sa):
		return name + ": ServiceAccount missing or not as wanted"
	case rb == nil || !operator.WantsRoleBinding(t, rb):
		return name + ": RoleBinding missing or not as wanted"
	}
	if !touched {
		return ""
	}
	if t.Annotations[TouchedAnnotation] == "" {
		return name + ": touch not seen yet"
	}
	for kind, obj := range map[string]client.Object{"ConfigMap": cm, "ServiceAccount": sa, "RoleBinding": rb} {
		if rv(obj) <= r.tampered[childKey(kind, t.Name)] {
			return fmt.Sprintf("%s: %s not repaired since the tampering", name, kind)
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

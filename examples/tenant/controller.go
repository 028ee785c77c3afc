// Package tenant is an example operator after Capsule (https://capsule.clastix.io):
// a cluster-scoped Tenant groups the namespaces labelled with its name, up to a
// namespace quota, and puts a ResourceQuota, a LimitRange, a NetworkPolicy and
// an owner RoleBinding in each of them, all controlled by the Tenant so that
// the garbage collector removes them with it.
//
// Three pieces run in one manager:
//   - [Reconciler], the Tenant controller;
//   - [RegistrySecretReconciler], which copies one named Secret into every
//     tenant namespace, watching only Secrets of that name;
//   - [ClusterRoles], a Runnable that server-side applies the ClusterRoles the
//     tenants bind before the Tenant controller needs them.
package tenant

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/indexer"
	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/predicates"
	"github.com/steadyk8s/steady/reconcile"

	tenancyv1alpha1 "github.com/steadyk8s/steady/examples/tenant/api/v1alpha1"
)

// CRDs holds the example's CustomResourceDefinitions, for tests and demos.
//
//go:embed config/crd/*.yaml
var CRDs embed.FS

// AddToScheme adds the tenancy.examples.steady.dev/v1alpha1 types to a scheme.
func AddToScheme(s *runtime.Scheme) error { return tenancyv1alpha1.AddToScheme(s) }

// Names of the objects the Tenant puts in each of its namespaces.
const (
	ResourceQuotaName    = "tenant-quota"
	LimitRangeName       = "tenant-limits"
	NetworkPolicyName    = "tenant-isolation"
	OwnerRoleBindingName = "tenant-owner"
)

// TenantsByNamespace indexes Tenants by the namespaces in their
// status.namespaces: which tenant does namespace X belong to is one lookup.
var TenantsByNamespace = indexer.New("status.namespaces", func(t *tenancyv1alpha1.Tenant) []string {
	return t.Status.Namespaces
})

// Reconciler reconciles Tenants.
type Reconciler struct {
	// Client is the manager's (cached) client.
	Client client.Client
	// Scheme is the manager's scheme.
	Scheme *runtime.Scheme
	// ClusterRolesReady, when set, is waited for (by requeueing) before any
	// RoleBinding is written: [ClusterRoles.Ready].
	ClusterRolesReady <-chan struct{}
	// Name is the controller's name; empty means "tenant".
	Name string

	reconciler interface {
		Reconcile(context.Context, ctrl.Request) (ctrl.Result, error)
	}
}

// +kubebuilder:rbac:groups=tenancy.examples.steady.dev,resources=tenants,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=tenancy.examples.steady.dev,resources=tenants/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=resourcequotas;limitranges,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=tenant-owner

// SetupWithManager registers the indexes and the Tenant controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Scheme == nil {
		r.Scheme = mgr.GetScheme()
	}
	rec, err := reconcile.NewController[tenancyv1alpha1.Tenant](mgr, r.reconcile,
		reconcile.WithReadySummary(conditions.SummaryOptions{ConditionTypes: []string{
			tenancyv1alpha1.NamespaceQuotaCondition,
			tenancyv1alpha1.NamespacesConfiguredCondition,
		}}),
		reconcile.WithObservedGeneration{}).
		Named(cmp.Or(r.Name, "tenant")).
		Client(r.Client).
		// Watched, and indexed for ownership.ListChildren.
		Owns(&corev1.ResourceQuota{}, &corev1.LimitRange{}, &networkingv1.NetworkPolicy{}, &rbacv1.RoleBinding{}).
		Index(TenantsByNamespace).
		// A namespace joins or leaves a tenant by its label; namespaces
		// change status (phase) too, which does not matter here.
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.tenantsOfNamespace),
			predicates.GenerationOrMetadataChanged()).
		Complete()
	r.reconciler = rec
	return err
}

// Reconcile implements reconcile.Reconciler; SetupWithManager must have run.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.reconciler.Reconcile(ctx, req)
}

// tenantsOfNamespace maps a namespace to the tenant its label names and to
// the tenants that list it in status.namespaces (through the index): when
// the label is removed or changed, the old tenant must let it go.
func (r *Reconciler) tenantsOfNamespace(ctx context.Context, obj client.Object) []ctrl.Request {
	var reqs []ctrl.Request
	if name := obj.GetLabels()[tenancyv1alpha1.TenantLabel]; name != "" {
		reqs = append(reqs, ctrl.Request{NamespacedName: types.NamespacedName{Name: name}})
	}
	tenants, err := TenantsByNamespace.Find(ctx, r.Client, r.Scheme, obj.GetName())
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "finding the tenants of a namespace", "namespace", obj.GetName())
	}
	for _, t := range tenants {
		req := ctrl.Request{NamespacedName: types.NamespacedName{Name: t.Name}}
		if !slices.Contains(reqs, req) {
			reqs = append(reqs, req)
		}
	}
	return reqs
}

// reconcile is the body For runs; For reads the Tenant, sets Ready and
// writes status once, and only when it changed.
func (r *Reconciler) reconcile(ctx context.Context, t *tenancyv1alpha1.Tenant) (ctrl.Result, error) {
	if !t.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the garbage collector removes the children
	}
	if r.ClusterRolesReady != nil {
		select {
		case <-r.ClusterRolesReady:
		default:
			conditions.MarkUnknown(t, tenancyv1alpha1.NamespacesConfiguredCondition,
				tenancyv1alpha1.ReasonWaitingForClusterRoles, "waiting for the ClusterRole %s", OwnerClusterRole)
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
	}

	admitted, over, err := r.members(ctx, t)
	if err != nil {
		return ctrl.Result{}, err
	}
	t.Status.Namespaces = admitted
	t.Status.Size = int32(len(admitted))
	if len(over) > 0 {
		// Not an error: retrying would not help. The condition says what is
		// wrong; a namespace or quota change brings us back.
		conditions.MarkFalse(t, tenancyv1alpha1.NamespaceQuotaCondition, tenancyv1alpha1.ReasonOverQuota,
			"%d namespaces labelled, quota %d: %s get no tenant objects",
			len(admitted)+len(over), *t.Spec.NamespaceQuota, strings.Join(over, ", "))
	} else {
		conditions.MarkTrue(t, tenancyv1alpha1.NamespaceQuotaCondition, tenancyv1alpha1.ReasonWithinQuota,
			"%d namespaces", len(admitted))
	}

	var errs []error
	for _, ns := range admitted {
		if err := r.configure(ctx, t, ns); err != nil {
			errs = append(errs, err)
		}
	}
	if err := r.prune(ctx, t, admitted); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		conditions.MarkFalse(t, tenancyv1alpha1.NamespacesConfiguredCondition, tenancyv1alpha1.ReasonApplyFailed,
			"%d errors configuring the tenant's namespaces; the first: %v", len(errs), errs[0])
		return ctrl.Result{}, err
	}
	conditions.MarkTrue(t, tenancyv1alpha1.NamespacesConfiguredCondition, tenancyv1alpha1.ReasonConfigured,
		"%d namespaces configured", len(admitted))
	return ctrl.Result{}, nil
}

// members returns the tenant's admitted namespaces (sorted by name) and
// those over its quota. Namespaces are admitted oldest first (by creation
// time, then name), so lowering the quota drops the newest; namespaces being
// deleted do not count.
func (r *Reconciler) members(ctx context.Context, t *tenancyv1alpha1.Tenant) (admitted, over []string, err error) {
	var list corev1.NamespaceList
	if err := r.Client.List(ctx, &list, client.MatchingLabels{tenancyv1alpha1.TenantLabel: t.Name}); err != nil {
		return nil, nil, fmt.Errorf("listing the namespaces of Tenant %s: %w", t.Name, err)
	}
	live := slices.DeleteFunc(list.Items, func(ns corev1.Namespace) bool { return !ns.DeletionTimestamp.IsZero() })
	sort.Slice(live, func(i, j int) bool {
		a, b := live[i].CreationTimestamp, live[j].CreationTimestamp
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return live[i].Name < live[j].Name
	})
	for i, ns := range live {
		if t.Spec.NamespaceQuota != nil && i >= int(*t.Spec.NamespaceQuota) {
			over = append(over, ns.Name)
		} else {
			admitted = append(admitted, ns.Name)
		}
	}
	sort.Strings(admitted)
	return admitted, over, nil
}

// configure puts the tenant's four objects in namespace ns. Each mutate sets
// the whole desired state, so a removal in the Tenant's spec (an ingress
// peer, a quota entry, the old owner) is a removal in the child.
func (r *Reconciler) configure(ctx context.Context, t *tenancyv1alpha1.Tenant, ns string) error {
	labels := func(obj client.Object) {
		l := obj.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l[tenancyv1alpha1.TenantLabel] = t.Name
		obj.SetLabels(l)
	}
	var errs []error
	// RecordOwner: a tenant's objects are what a backup brings back; the
	// record (the tenant's kind and name in two labels) has the restored
	// Tenant, a new UID, take them back, and another tenant refuse them.
	add := func(obj client.Object, mutate func()) {
		_, err := ownership.CreateOrUpdate(ctx, r.Client, t, obj, func() error {
			labels(obj)
			mutate()
			return nil
		}, ownership.RecordOwner{})
		if err != nil {
			errs = append(errs, fmt.Errorf("Tenant %s: %w", t.Name, err))
		}
	}

	rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ResourceQuotaName}}
	add(rq, func() { rq.Spec = corev1.ResourceQuotaSpec{Hard: t.Spec.ResourceQuota} })

	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: LimitRangeName}}
	add(lr, func() { lr.Spec = corev1.LimitRangeSpec{Limits: t.Spec.LimitRanges} })

	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: NetworkPolicyName}}
	add(np, func() { np.Spec = networkPolicySpec(t) })

	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: OwnerRoleBindingName}}
	add(rb, func() {
		rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: OwnerClusterRole}
		rb.Subjects = []rbacv1.Subject{ownerSubject(t.Spec.Owner)}
	})
	return errors.Join(errs...)
}

// networkPolicySpec isolates a tenant namespace: ingress only from the
// tenant's own namespaces and the peers the spec allows.
func networkPolicySpec(t *tenancyv1alpha1.Tenant) networkingv1.NetworkPolicySpec {
	from := []networkingv1.NetworkPolicyPeer{{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{tenancyv1alpha1.TenantLabel: t.Name}},
	}}
	from = append(from, t.Spec.AllowIngressFrom...)
	return networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{},
		Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: from}},
		// Set explicitly: the API server would default it, and a defaulted
		// field costs CreateOrUpdate a dry run on every reconcile.
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
	}
}

// ownerSubject is the RBAC subject of the tenant's owner, with the API group
// the API server would default, so that nothing differs on the next read.
func ownerSubject(o tenancyv1alpha1.TenantOwner) rbacv1.Subject {
	s := rbacv1.Subject{Kind: o.Kind, Name: o.Name}
	if o.Kind == rbacv1.ServiceAccountKind {
		s.Namespace = o.Namespace
	} else {
		s.APIGroup = rbacv1.GroupName
	}
	return s
}

// prune deletes the tenant's children in namespaces that are no longer
// admitted (label removed, over the quota, quota lowered).
func (r *Reconciler) prune(ctx context.Context, t *tenancyv1alpha1.Tenant, admitted []string) error {
	var errs []error
	for _, list := range []client.ObjectList{
		&corev1.ResourceQuotaList{}, &corev1.LimitRangeList{},
		&networkingv1.NetworkPolicyList{}, &rbacv1.RoleBindingList{},
	} {
		if err := ownership.ListChildren(ctx, r.Client, t, list); err != nil {
			errs = append(errs, fmt.Errorf("listing the children of Tenant %s: %w", t.Name, err))
			continue
		}
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			obj := o.(client.Object)
			if slices.Contains(admitted, obj.GetNamespace()) {
				return nil
			}
			if err := deleteExactly(ctx, r.Client, obj); err != nil {
				errs = append(errs, fmt.Errorf("Tenant %s: pruning %s %s/%s: %w", t.Name,
					reflect.TypeOf(obj).Elem().Name(), obj.GetNamespace(), obj.GetName(), err))
			}
			return nil
		})
	}
	return errors.Join(errs...)
}

// deleteExactly deletes obj if it is still the object that was read (its
// UID), and counts an object already gone as deleted.
func deleteExactly(ctx context.Context, c client.Client, obj client.Object) error {
	uid := obj.GetUID()
	err := c.Delete(ctx, obj, client.Preconditions{UID: &uid})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or another object under that name now
	}
	return err
}

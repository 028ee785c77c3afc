// Package usernamespace is an example operator after Cloudflare's
// user→namespace controller: a cluster-scoped User gets a namespace of its own
// and the RBAC to use it. The User controls every child, the cluster-scoped
// ones (Namespace, ClusterRole, ClusterRoleBinding) and the namespaced ones
// (RoleBinding, ResourceQuota) alike, so that deleting the User deletes
// everything: the garbage collector removes the children, and the namespace
// controller empties the namespace.
package usernamespace

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/reconcile"

	identityv1alpha1 "github.com/steadyk8s/steady/examples/usernamespace/api/v1alpha1"
)

// CRDs holds the example's CustomResourceDefinitions, for tests and demos.
//
//go:embed config/crd/*.yaml
var CRDs embed.FS

// AddToScheme adds the identity.examples.steady.dev/v1alpha1 types to a scheme.
func AddToScheme(s *runtime.Scheme) error { return identityv1alpha1.AddToScheme(s) }

// Names of the namespaced children, in the user's namespace.
const (
	RoleBindingName   = "user"
	ResourceQuotaName = "user-quota"
)

// NamespaceName is the name of the user's namespace, and of its ClusterRole
// and ClusterRoleBinding.
func NamespaceName(user string) string { return "user-" + user }

// Reconciler reconciles Users.
type Reconciler struct {
	// Client is the manager's (cached) client.
	Client client.Client
	// Name is the controller's name; empty means "user".
	Name string

	reconciler interface {
		Reconcile(context.Context, ctrl.Request) (ctrl.Result, error)
	}
}

// +kubebuilder:rbac:groups=identity.examples.steady.dev,resources=users,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=identity.examples.steady.dev,resources=users/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings;clusterrolebindings,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=get;list;watch;create;update;bind;escalate

// forOptions are the options of the User reconcile, for Init and
// SetupWithManager alike.
func (r *Reconciler) forOptions() []reconcile.ForOption {
	return []reconcile.ForOption{
		reconcile.WithReadySummary(conditions.SummaryOptions{ConditionTypes: []string{
			identityv1alpha1.NamespaceReadyCondition,
			identityv1alpha1.RBACReadyCondition,
		}}),
		reconcile.WithObservedGeneration{},
	}
}

// Init builds the reconciler on Client (steady.NewClient of the cluster,
// which carries its API reader) without registering a controller: for a
// manager of many clusters (examples/fleet), where each cluster gets a
// Reconciler of its own.
func (r *Reconciler) Init() error {
	rec, err := reconcile.For[identityv1alpha1.User](r.Client, r.reconcile, r.forOptions()...)
	if err != nil {
		return err
	}
	r.reconciler = rec
	return nil
}

// SetupWithManager registers the User controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	// Owns maps a child to its controller, cluster-scoped owner or not.
	rec, err := reconcile.NewController[identityv1alpha1.User](mgr, r.reconcile, r.forOptions()...).
		Named(cmp.Or(r.Name, "user")).
		Client(r.Client).
		Owns(Owned()...).
		Complete()
	r.reconciler = rec
	return err
}

// Owned returns an object of each kind of a User's children, which its
// controller watches (Owns).
func Owned() []client.Object {
	return []client.Object{&corev1.Namespace{}, &rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{},
		&rbacv1.RoleBinding{}, &corev1.ResourceQuota{}}
}

// Reconcile implements reconcile.Reconciler; Init (or SetupWithManager) must have run.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.reconciler.Reconcile(ctx, req)
}

func (r *Reconciler) reconcile(ctx context.Context, u *identityv1alpha1.User) (ctrl.Result, error) {
	if !u.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the garbage collector removes the children
	}
	nsName := NamespaceName(u.Name)
	u.Status.Namespace = nsName
	labels := map[string]string{identityv1alpha1.UserLabel: u.Name}

	// The namespace. One that exists and is not ours is never adopted:
	// deleting the User would delete it, with someone else's workloads.
	ns := &corev1.Namespace{}
	err := r.Client.Get(ctx, types.NamespacedName{Name: nsName}, ns)
	switch {
	case err == nil && !metav1.IsControlledBy(ns, u):
		conditions.MarkFalse(u, identityv1alpha1.NamespaceReadyCondition, identityv1alpha1.ReasonNamespaceTaken,
			"namespace %s exists and is not controlled by this User", nsName)
		conditions.MarkUnknown(u, identityv1alpha1.RBACReadyCondition, identityv1alpha1.ReasonWaitingForNamespace, "")
		return ctrl.Result{}, nil // not an error: only a person can resolve it
	case err == nil && !ns.DeletionTimestamp.IsZero():
		// Someone deleted it; its deletion event brings us back to make a
		// new one. Nothing can be created in it meanwhile.
		conditions.MarkFalse(u, identityv1alpha1.NamespaceReadyCondition, identityv1alpha1.ReasonNamespaceTerminating,
			"namespace %s is being deleted; it is recreated once gone", nsName)
		conditions.MarkUnknown(u, identityv1alpha1.RBACReadyCondition, identityv1alpha1.ReasonWaitingForNamespace, "")
		return ctrl.Result{}, nil
	case err != nil && !apierrors.IsNotFound(err):
		return ctrl.Result{}, fmt.Errorf("reading Namespace %s: %w", nsName, err)
	}
	ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName}}
	if _, err := ownership.CreateOrUpdate(ctx, r.Client, u, ns, func() error {
		ns.Labels = mergeLabels(ns.Labels, labels)
		return nil
	}); err != nil {
		conditions.MarkFalse(u, identityv1alpha1.NamespaceReadyCondition, identityv1alpha1.ReasonApplyFailed, "%v", err)
		return ctrl.Result{}, fmt.Errorf("User %s: %w", u.Name, err)
	}
	conditions.MarkTrue(u, identityv1alpha1.NamespaceReadyCondition, identityv1alpha1.ReasonCreated, "namespace %s", nsName)

	replacing, err := r.rbac(ctx, u, nsName, labels)
	if err != nil {
		conditions.MarkFalse(u, identityv1alpha1.RBACReadyCondition, identityv1alpha1.ReasonApplyFailed, "%v", err)
		return ctrl.Result{}, fmt.Errorf("User %s: %w", u.Name, err)
	}
	if replacing {
		// Not an error, and no requeue: the RoleBinding's deletion event
		// (Owns) brings the reconcile that creates the new one.
		conditions.MarkUnknown(u, identityv1alpha1.RBACReadyCondition, identityv1alpha1.ReasonReplacingRoleBinding,
			"RoleBinding %s/%s deleted to bind ClusterRole %s", nsName, RoleBindingName, u.Spec.ClusterRole)
		return ctrl.Result{}, nil
	}
	conditions.MarkTrue(u, identityv1alpha1.RBACReadyCondition, identityv1alpha1.ReasonCreated,
		"bound to ClusterRole %s in namespace %s", u.Spec.ClusterRole, nsName)
	return ctrl.Result{}, nil
}

// rbac makes the user's RoleBinding, ClusterRole, ClusterRoleBinding and
// ResourceQuota match the spec. It reports whether it deleted the RoleBinding
// to create it again with another roleRef, on the next reconcile.
func (r *Reconciler) rbac(ctx context.Context, u *identityv1alpha1.User, nsName string, labels map[string]string) (replacing bool, _ error) {
	var errs []error

	// The RoleBinding: the user and its groups, bound to spec.clusterRole.
	// Its roleRef cannot change: a new role means a new RoleBinding.
	role := u.Spec.ClusterRole
	if role == "" {
		role = "edit"
	}
	roleRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: nsName, Name: RoleBindingName}}
	replaced, err := r.deleteIfRoleRefDiffers(ctx, u, rb, roleRef)
	if err != nil {
		errs = append(errs, err)
	} else if replaced {
		// Creating the new one now would race the cache, which still holds
		// the old one.
		replacing = true
	} else if _, err := ownership.CreateOrUpdate(ctx, r.Client, u, rb, func() error {
		rb.Labels = mergeLabels(rb.Labels, labels)
		rb.RoleRef = roleRef
		rb.Subjects = subjects(u)
		return nil
	}); err != nil {
		errs = append(errs, err)
	}

	// A ClusterRole and its binding so that the user can see its own
	// namespace and its own User: namespaces are cluster-scoped, a
	// RoleBinding cannot grant that.
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: nsName}}
	if _, err := ownership.CreateOrUpdate(ctx, r.Client, u, cr, func() error {
		cr.Labels = mergeLabels(cr.Labels, labels)
		cr.Rules = []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{nsName}, Verbs: []string{"get", "watch"}},
			{APIGroups: []string{identityv1alpha1.GroupVersion.Group}, Resources: []string{"users"}, ResourceNames: []string{u.Name}, Verbs: []string{"get", "watch"}},
		}
		return nil
	}); err != nil {
		errs = append(errs, err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: nsName}}
	if _, err := ownership.CreateOrUpdate(ctx, r.Client, u, crb, func() error {
		crb.Labels = mergeLabels(crb.Labels, labels)
		crb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: nsName}
		crb.Subjects = []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u.Name}}
		return nil
	}); err != nil {
		errs = append(errs, err)
	}

	// The ResourceQuota, only while the spec asks for one.
	rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: nsName, Name: ResourceQuotaName}}
	if len(u.Spec.ResourceQuota) > 0 {
		if _, err := ownership.CreateOrUpdate(ctx, r.Client, u, rq, func() error {
			rq.Labels = mergeLabels(rq.Labels, labels)
			rq.Spec = corev1.ResourceQuotaSpec{Hard: u.Spec.ResourceQuota}
			return nil
		}); err != nil {
			errs = append(errs, err)
		}
	} else if err := r.deleteOwned(ctx, u, rq); err != nil {
		errs = append(errs, err)
	}
	return replacing, errors.Join(errs...)
}

// subjects are the user and its groups, with the API group the API server
// would default, so that nothing differs on the next read.
func subjects(u *identityv1alpha1.User) []rbacv1.Subject {
	s := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u.Name}}
	for _, g := range u.Spec.Groups {
		s = append(s, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: g})
	}
	return s
}

// deleteIfRoleRefDiffers deletes the user's RoleBinding when it binds
// another role: roleRef is immutable. It reports whether it deleted it.
func (r *Reconciler) deleteIfRoleRefDiffers(ctx context.Context, u *identityv1alpha1.User, rb *rbacv1.RoleBinding, want rbacv1.RoleRef) (bool, error) {
	live := &rbacv1.RoleBinding{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(rb), live); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if live.RoleRef == want || !metav1.IsControlledBy(live, u) {
		return false, nil // not ours: CreateOrUpdate reports it
	}
	return true, r.deleteOwned(ctx, u, live)
}

// deleteOwned deletes obj if it exists and u controls it (exactly that
// object: its UID is a precondition).
func (r *Reconciler) deleteOwned(ctx context.Context, u *identityv1alpha1.User, obj client.Object) error {
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(obj, u) {
		return nil
	}
	uid := obj.GetUID()
	err := r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

func mergeLabels(have, want map[string]string) map[string]string {
	if have == nil {
		have = map[string]string{}
	}
	for k, v := range want {
		have[k] = v
	}
	return have
}

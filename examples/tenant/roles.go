package tenant

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Names of the ClusterRoles that ClusterRoles ensures.
const (
	// OwnerClusterRole is bound to a tenant's owner in each of its
	// namespaces by the tenant-owner RoleBinding.
	OwnerClusterRole = "tenant-owner"
	// ViewerClusterRole lets its subjects read Tenants; bind it to whoever
	// should see them.
	ViewerClusterRole = "tenant-viewer"
)

// FieldManager is the server-side apply field manager of this example.
const FieldManager = "tenant-controller"

// ClusterRoles is a manager Runnable that server-side applies the
// ClusterRoles the tenants need when the manager starts, before the
// controllers run: it does not need leader election, so the manager starts it
// with its caches, ahead of the controllers; the Tenant controller still waits
// for Ready before it writes a RoleBinding (the manager does not wait for a
// Runnable to finish). Failed applies are retried with backoff until they
// succeed or the manager stops.
type ClusterRoles struct {
	// Client writes the ClusterRoles (the manager's client is fine: applies
	// do not read).
	Client client.Client
	// Backoff between failed attempts; zero means 200ms doubling to 10s.
	Backoff wait.Backoff

	once  sync.Once
	ready chan struct{}
}

var (
	_ manager.Runnable               = &ClusterRoles{}
	_ manager.LeaderElectionRunnable = &ClusterRoles{}
)

// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=get;list;watch;create;patch;escalate

// Ready is closed once the ClusterRoles are applied.
func (c *ClusterRoles) Ready() <-chan struct{} {
	c.once.Do(func() { c.ready = make(chan struct{}) })
	return c.ready
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: applying
// the same ClusterRoles from every replica is harmless.
func (c *ClusterRoles) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable: it applies the ClusterRoles, retrying
// until that succeeds, closes Ready and returns. It returns an error only
// when ctx ends first.
func (c *ClusterRoles) Start(ctx context.Context) error {
	c.Ready() // makes the channel
	b := c.Backoff
	if b.Duration == 0 {
		b = wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 1 << 30, Cap: 10 * time.Second}
	}
	log := ctrl.LoggerFrom(ctx).WithName("cluster-roles")
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, b, func(ctx context.Context) (bool, error) {
		if last = EnsureClusterRoles(ctx, c.Client); last != nil {
			log.Error(last, "applying the tenants' ClusterRoles; retrying")
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		if last != nil {
			return fmt.Errorf("the tenants' ClusterRoles were not applied: %w", last)
		}
		return fmt.Errorf("the tenants' ClusterRoles were not applied: %w", err)
	}
	close(c.ready)
	return nil
}

// EnsureClusterRoles server-side applies the tenants' ClusterRoles with
// FieldManager, forcing ownership of their rules: a changed rule is set back,
// a role someone deleted is created again.
func EnsureClusterRoles(ctx context.Context, c client.Client) error {
	for _, role := range clusterRoles() {
		if err := c.Apply(ctx, role, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying ClusterRole %s: %w", *role.Name, err)
		}
	}
	return nil
}

func clusterRoles() []*rbacv1ac.ClusterRoleApplyConfiguration {
	rw := []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	ro := []string{"get", "list", "watch"}
	labels := map[string]string{"app.kubernetes.io/managed-by": FieldManager}
	return []*rbacv1ac.ClusterRoleApplyConfiguration{
		rbacv1ac.ClusterRole(OwnerClusterRole).WithLabels(labels).WithRules(
			rbacv1ac.PolicyRule().WithAPIGroups("").
				WithResources("pods", "pods/log", "pods/exec", "services", "configmaps", "secrets",
					"persistentvolumeclaims", "serviceaccounts").WithVerbs(rw...),
			rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("events", "resourcequotas", "limitranges").WithVerbs(ro...),
			rbacv1ac.PolicyRule().WithAPIGroups("apps").
				WithResources("deployments", "statefulsets", "daemonsets", "replicasets").WithVerbs(rw...),
			rbacv1ac.PolicyRule().WithAPIGroups("batch").WithResources("jobs", "cronjobs").WithVerbs(rw...),
			rbacv1ac.PolicyRule().WithAPIGroups("networking.k8s.io").WithResources("ingresses").WithVerbs(rw...),
			rbacv1ac.PolicyRule().WithAPIGroups("networking.k8s.io").WithResources("networkpolicies").WithVerbs(ro...),
		),
		rbacv1ac.ClusterRole(ViewerClusterRole).WithLabels(labels).WithRules(
			rbacv1ac.PolicyRule().WithAPIGroups("tenancy.examples.steady.dev").WithResources("tenants").WithVerbs(ro...),
		),
	}
}

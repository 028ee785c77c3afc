package tenant

import (
	"context"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/predicates"

	tenancyv1alpha1 "github.com/steadyk8s/steady/examples/tenant/api/v1alpha1"
)

// CopyOfLabel marks the copies RegistrySecretReconciler makes; its value is
// the name of the Secret copied.
const CopyOfLabel = "tenancy.examples.steady.dev/copy-of"

// DefaultRegistrySecret is the name of the Secret copied into every tenant
// namespace unless configured otherwise.
const DefaultRegistrySecret = "tenant-registry-credentials"

// RegistrySecretReconciler copies one named Secret (registry credentials,
// say) from a source namespace into every namespace of every Tenant, keeps
// the copies equal to it, and deletes copies that no tenant namespace needs
// any more, or all of them when the source is gone. Each copy is controlled by
// the Tenant of its namespace, so it goes with the Tenant.
//
// It watches only Secrets of that name (predicates.Names), and Tenants, whose
// status.namespaces say where copies belong; every event leads to one
// reconcile of the source. Restrict the manager's Secret cache to that name
// with [SecretCacheByObject], or the manager caches every Secret of the
// cluster.
type RegistrySecretReconciler struct {
	// Client is the manager's (cached) client.
	Client client.Client
	// Source is the Secret copied; the copies have its name.
	Source types.NamespacedName
	// Name is the controller's name; empty means "tenant-registry-secret".
	Name string
}

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=tenancy.examples.steady.dev,resources=tenants,verbs=get;list;watch

// SecretCacheByObject restricts the manager's cache of Secrets to those named
// name, in every namespace: pass it as cache.Options.ByObject.
func SecretCacheByObject(name string) map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Field: fields.OneTermEqualSelector("metadata.name", name)},
	}
}

// SetupWithManager registers the controller.
func (r *RegistrySecretReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Source.Name == "" || r.Source.Namespace == "" {
		return fmt.Errorf("RegistrySecretReconciler: Source needs a namespace and a name, got %q", r.Source)
	}
	name := r.Name
	if name == "" {
		name = "tenant-registry-secret"
	}
	toSource := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []ctrl.Request {
		return []ctrl.Request{{NamespacedName: r.Source}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		// The source and every copy (edited or deleted by someone): only
		// Secrets of this name reach the queue.
		Watches(&corev1.Secret{}, toSource, builder.WithPredicates(predicates.Names(r.Source.Name))).
		Watches(&tenancyv1alpha1.Tenant{}, toSource).
		Complete(r)
}

// Reconcile makes the copies match the source; the request is always the
// source's.
func (r *RegistrySecretReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	source := &corev1.Secret{}
	if err := r.Client.Get(ctx, r.Source, source); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("reading Secret %s: %w", r.Source, err)
		}
		source = nil
	}
	var tenants tenancyv1alpha1.TenantList
	if err := r.Client.List(ctx, &tenants); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing Tenants: %w", err)
	}
	want := map[string]*tenancyv1alpha1.Tenant{} // namespace -> its tenant
	if source != nil {
		for i := range tenants.Items {
			t := &tenants.Items[i]
			if !t.DeletionTimestamp.IsZero() {
				continue
			}
			for _, ns := range t.Status.Namespaces {
				if ns != r.Source.Namespace {
					want[ns] = t
				}
			}
		}
	}

	var errs []error
	for ns, t := range want {
		copy := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: r.Source.Name}}
		// Adopt: a namespace that moved to another tenant keeps its copy,
		// now controlled by the new tenant. RecordOwner, as for the
		// tenant's other objects: a restored copy goes back to its tenant.
		_, err := ownership.CreateOrUpdate(ctx, r.Client, t, copy, func() error {
			if copy.Labels == nil {
				copy.Labels = map[string]string{}
			}
			copy.Labels[CopyOfLabel] = r.Source.Name
			copy.Labels[tenancyv1alpha1.TenantLabel] = t.Name
			copy.Type = source.Type
			copy.Data = maps.Clone(source.Data)
			copy.StringData = nil
			return nil
		}, ownership.Adopt{}, ownership.RecordOwner{})
		if err != nil {
			errs = append(errs, fmt.Errorf("copying Secret %s into namespace %s: %w", r.Source, ns, err))
		}
	}

	var copies corev1.SecretList
	if err := r.Client.List(ctx, &copies, client.MatchingLabels{CopyOfLabel: r.Source.Name}); err != nil {
		errs = append(errs, fmt.Errorf("listing the copies of Secret %s: %w", r.Source, err))
	}
	for i := range copies.Items {
		c := &copies.Items[i]
		if _, ok := want[c.Namespace]; ok || c.Name != r.Source.Name {
			continue
		}
		if err := deleteExactly(ctx, r.Client, c); err != nil {
			errs = append(errs, fmt.Errorf("deleting Secret %s/%s: %w", c.Namespace, c.Name, err))
		}
	}
	return ctrl.Result{}, errors.Join(errs...)
}

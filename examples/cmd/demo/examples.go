package main

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/steadyk8s/steady/examples/bundle"
	bundlev1alpha1 "github.com/steadyk8s/steady/examples/bundle/api/v1alpha1"
)

// registry lists the examples the demo runs, in the order of issue 12.
//
// TODO(merge): the tenant, usernamespace, at and bucket examples are written
// on other branches; when they are merged, uncomment their entries below
// (and the imports they need), adjusting the Reconciler fields to what each
// package exports. Each entry is all the demo needs: scheme, CRDs,
// controllers, samples (read from <name>/config/samples) and owner kinds.
func registry() []demoExample {
	return []demoExample{
		// TODO(merge): tenant (import "github.com/steadyk8s/steady/examples/tenant"
		// and tenancyv1alpha1 ".../examples/tenant/api/v1alpha1").
		// {
		// 	Name:        "tenant",
		// 	AddToScheme: tenant.AddToScheme,
		// 	CRDs:        tenant.CRDs,
		// 	Setup: func(mgr ctrl.Manager, _ *demoContext) error {
		// 		roles := &tenant.ClusterRoles{Client: mgr.GetClient()}
		// 		if err := mgr.Add(roles); err != nil {
		// 			return err
		// 		}
		// 		if err := (&tenant.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ClusterRolesReady: roles.Ready()}).SetupWithManager(mgr); err != nil {
		// 			return err
		// 		}
		// 		return (&tenant.RegistrySecretReconciler{Client: mgr.GetClient(),
		// 			Source: types.NamespacedName{Namespace: "tenant-system", Name: tenant.DefaultRegistrySecret}}).SetupWithManager(mgr)
		// 	},
		// 	Owners: []schema.GroupVersionKind{tenancyv1alpha1.GroupVersion.WithKind("Tenant")},
		// },

		// TODO(merge): usernamespace (import "github.com/steadyk8s/steady/examples/usernamespace"
		// and its api/v1alpha1; the owner kind is whatever that API names).
		// {
		// 	Name:        "usernamespace",
		// 	AddToScheme: usernamespace.AddToScheme,
		// 	CRDs:        usernamespace.CRDs,
		// 	Setup: func(mgr ctrl.Manager, _ *demoContext) error {
		// 		return (&usernamespace.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}).SetupWithManager(mgr)
		// 	},
		// 	Owners: []schema.GroupVersionKind{usernamespacev1alpha1.GroupVersion.WithKind("User")},
		// },

		// TODO(merge): at (import "github.com/steadyk8s/steady/examples/at" and
		// its api/v1alpha1). Its Pods are children the tree finds already.
		// {
		// 	Name:        "at",
		// 	AddToScheme: at.AddToScheme,
		// 	CRDs:        at.CRDs,
		// 	Setup: func(mgr ctrl.Manager, _ *demoContext) error {
		// 		return (&at.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}).SetupWithManager(mgr)
		// 	},
		// 	Owners: []schema.GroupVersionKind{atv1alpha1.GroupVersion.WithKind("At")},
		// },

		// TODO(merge): bucket (import "github.com/steadyk8s/steady/examples/bucket"
		// and its api/v1alpha1). It needs its in-process S3 server, started in
		// Start and stopped with the demo; the deletion phase waits until the
		// external buckets are gone too.
		// {
		// 	Name:        "bucket",
		// 	AddToScheme: bucket.AddToScheme,
		// 	CRDs:        bucket.CRDs,
		// 	Start: func(ctx context.Context, dc *demoContext) error {
		// 		s3 := bucket.NewFakeS3()
		// 		dc.OnStop(s3.Close)
		// 		dc.Values["bucket"] = s3
		// 		dc.CheckGone("external buckets (fake S3)", func(ctx context.Context) (bool, error) {
		// 			names, err := s3.ListBuckets(ctx)
		// 			return len(names) == 0, err
		// 		})
		// 		return nil
		// 	},
		// 	Setup: func(mgr ctrl.Manager, dc *demoContext) error {
		// 		s3 := dc.Values["bucket"].(*bucket.FakeS3)
		// 		return (&bucket.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), S3: s3.Client()}).SetupWithManager(mgr)
		// 	},
		// 	Extra: func(ctx context.Context, dc *demoContext, owner *unstructured.Unstructured) ([]string, error) {
		// 		s3 := dc.Values["bucket"].(*bucket.FakeS3)
		// 		exists, err := s3.BucketExists(ctx, owner.GetName()) // the external name the example uses
		// 		return []string{fmt.Sprintf("external bucket %q in the fake S3: exists=%t", owner.GetName(), exists)}, err
		// 	},
		// 	Owners: []schema.GroupVersionKind{bucketv1alpha1.GroupVersion.WithKind("Bucket")},
		// },

		{
			Name:        "bundle",
			AddToScheme: bundle.AddToScheme,
			CRDs:        bundle.CRDs,
			Setup: func(mgr ctrl.Manager, _ *demoContext) error {
				return (&bundle.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}).SetupWithManager(mgr)
			},
			// A Bundle's members are found by its ApplySet labels, not by
			// ownerReferences: the tree lists them as members.
			Owners: []schema.GroupVersionKind{bundlev1alpha1.GroupVersion.WithKind("Bundle")},
		},
	}
}

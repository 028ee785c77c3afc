package main

import (
	"context"
	"fmt"

	"github.com/minio/minio-go/v7"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/steadyk8s/steady"
	"github.com/steadyk8s/steady/examples/at"
	atv1alpha1 "github.com/steadyk8s/steady/examples/at/api/v1alpha1"
	"github.com/steadyk8s/steady/examples/bucket"
	bucketv1alpha1 "github.com/steadyk8s/steady/examples/bucket/api/v1alpha1"
	"github.com/steadyk8s/steady/examples/bundle"
	bundlev1alpha1 "github.com/steadyk8s/steady/examples/bundle/api/v1alpha1"
	"github.com/steadyk8s/steady/examples/tenant"
	tenancyv1alpha1 "github.com/steadyk8s/steady/examples/tenant/api/v1alpha1"
	"github.com/steadyk8s/steady/examples/usernamespace"
	identityv1alpha1 "github.com/steadyk8s/steady/examples/usernamespace/api/v1alpha1"
)

// registry lists the examples the demo runs, in the order of issue 12. Each
// entry is all the demo needs: scheme, CRDs, controllers, samples (read from
// <name>/config/samples) and owner kinds.
func registry() []demoExample {
	return []demoExample{
		{
			Name:        "tenant",
			AddToScheme: tenant.AddToScheme,
			CRDs:        tenant.CRDs,
			Setup: func(mgr ctrl.Manager, _ *demoContext) error {
				c := steady.NewClient(mgr) // one per manager, shared by its reconcilers
				roles := &tenant.ClusterRoles{Client: c}
				if err := mgr.Add(roles); err != nil {
					return err
				}
				if err := (&tenant.Reconciler{Client: c, ClusterRolesReady: roles.Ready()}).SetupWithManager(mgr); err != nil {
					return err
				}
				return (&tenant.RegistrySecretReconciler{Client: c,
					Source: types.NamespacedName{Namespace: "tenant-system", Name: tenant.DefaultRegistrySecret}}).SetupWithManager(mgr)
			},
			Owners: []schema.GroupVersionKind{tenancyv1alpha1.GroupVersion.WithKind("Tenant")},
		},

		{
			Name:        "usernamespace",
			AddToScheme: usernamespace.AddToScheme,
			CRDs:        usernamespace.CRDs,
			Setup: func(mgr ctrl.Manager, _ *demoContext) error {
				return (&usernamespace.Reconciler{Client: steady.NewClient(mgr)}).SetupWithManager(mgr)
			},
			Owners:     []schema.GroupVersionKind{identityv1alpha1.GroupVersion.WithKind("User")},
			ChildKinds: []schema.GroupVersionKind{{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}},
		},

		{
			Name:        "at",
			AddToScheme: at.AddToScheme,
			CRDs:        at.CRDs,
			Setup: func(mgr ctrl.Manager, _ *demoContext) error {
				return (&at.Reconciler{Client: steady.NewClient(mgr)}).SetupWithManager(mgr)
			},
			Owners: []schema.GroupVersionKind{atv1alpha1.GroupVersion.WithKind("At")},
		},

		{
			Name:        "bucket",
			AddToScheme: bucket.AddToScheme,
			CRDs:        bucket.CRDs,
			Start: func(ctx context.Context, dc *demoContext) error {
				fake := bucket.NewFakeS3()
				dc.OnStop(fake.Close)
				s3, err := fake.S3.NewClient()
				if err != nil {
					return err
				}
				dc.Values["bucket"] = fake
				dc.Values["bucket.client"] = s3
				return nil
			},
			Setup: func(mgr ctrl.Manager, dc *demoContext) error {
				fake := dc.Values["bucket"].(*bucket.FakeS3)
				return (&bucket.Reconciler{Client: steady.NewClient(mgr), S3: fake.S3}).SetupWithManager(mgr)
			},
			Extra: func(ctx context.Context, dc *demoContext, owner *unstructured.Unstructured) ([]string, error) {
				b := &bucketv1alpha1.Bucket{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(owner.Object, b); err != nil {
					return nil, err
				}
				s3 := dc.Values["bucket.client"].(*minio.Client)
				name := bucket.ExternalName(b)
				exists, err := s3.BucketExists(ctx, name)
				if err != nil {
					return nil, err
				}
				fate := "deleted with the Bucket"
				if b.Spec.DeletionPolicy == bucketv1alpha1.DeletionPolicyRetain {
					fate = "kept when the Bucket goes (deletionPolicy Retain)"
				} else {
					dc.CheckGone(fmt.Sprintf("external bucket %s (fake S3)", name), func(ctx context.Context) (bool, error) {
						exists, err := s3.BucketExists(ctx, name)
						return !exists, err
					})
				}
				return []string{fmt.Sprintf("external bucket %s in the fake S3: exists=%t, %s", name, exists, fate)}, nil
			},
			Owners: []schema.GroupVersionKind{bucketv1alpha1.GroupVersion.WithKind("Bucket")},
			// A bucket name S3 refuses (an IP address): the Bucket stalls, not Ready.
			Broken: "apiVersion: s3.examples.steadyk8s.io/v1alpha1\nkind: Bucket\n" +
				"metadata: {name: broken, namespace: default}\nspec: {bucketName: 10.0.0.1, deletionPolicy: Retain}\n",
		},

		{
			Name:        "bundle",
			AddToScheme: bundle.AddToScheme,
			CRDs:        bundle.CRDs,
			Setup: func(mgr ctrl.Manager, _ *demoContext) error {
				return (&bundle.Reconciler{Client: steady.NewClient(mgr)}).SetupWithManager(mgr)
			},
			// A Bundle's members are found by its ApplySet labels, not by
			// ownerReferences: the tree lists them as members.
			Owners: []schema.GroupVersionKind{bundlev1alpha1.GroupVersion.WithKind("Bundle")},
		},
	}
}

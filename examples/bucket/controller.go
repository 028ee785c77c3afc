// Package bucket is an example operator built with steady: a Bucket is a
// bucket in S3-compatible object storage, its real state kept there and
// reached through the S3 API with a real client (minio-go), so the same
// operator works against AWS S3, MinIO or any other S3 implementation.
//
// For each Bucket the controller creates the external bucket, sets its
// versioning as the spec says and writes a Secret "<name>-credentials", owned
// by the Bucket, with what a consumer needs to use it (endpoint, bucket name,
// region, access key). A finalizer deletes the external bucket when the Bucket
// goes, according to its deletionPolicy: Delete, or Retain. A delete that
// fails (a bucket that still holds objects: the operator never deletes data)
// keeps the finalizer, says why in the Deleting condition and is retried with
// backoff.
//
// steady does the bookkeeping: reconcile.For reads the Bucket, persists the
// finalizer before anything external is created, runs the cleanup on deletion,
// and writes what the reconcile changed in one PATCH, or none;
// WithReadySummary derives Ready from BucketReady and CredentialsReady;
// ownership.CreateOrUpdate writes the Secret only when it differs;
// predicates.GenerationChanged keeps the controller's own status writes from
// waking it.
//
// The design follows the managed-resource pattern of Crossplane's provider-aws
// S3 Bucket (external name, deletion policy, a connection Secret) and the
// cleanup-with-finalizer flow of the Kubebuilder book's "Using Finalizers".
package bucket

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/s3utils"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steadyk8s/steady"
	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/examples/bucket/api/v1alpha1"
	"github.com/steadyk8s/steady/finalizer"
	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/reconcile"
)

// CRDs holds the Bucket CustomResourceDefinition, for tests and the demo
// (testenv.WithCRDs{FS: bucket.CRDs, Paths: []string{"config/crd"}}).
//
//go:embed config/crd/*.yaml
var CRDs embed.FS

// AddToScheme registers the Bucket API in a scheme. The controller also needs
// client-go's types (Secrets) in it: clientgoscheme.AddToScheme.
func AddToScheme(s *runtime.Scheme) error { return v1alpha1.AddToScheme(s) }

const (
	// Finalizer guards the external bucket of a Bucket.
	Finalizer = "s3.examples.steadyk8s.io/bucket"

	// DefaultRegion is where buckets go when neither the Bucket nor the
	// S3Config names a region.
	DefaultRegion = "us-east-1"

	// DefaultResync is how often a converged Bucket is checked against
	// object storage, for changes made there behind the operator's back.
	DefaultResync = 10 * time.Minute

	// Keys of the credentials Secret.
	SecretEndpoint        = "endpoint"
	SecretBucket          = "bucket"
	SecretRegion          = "region"
	SecretAccessKeyID     = "accessKeyID"
	SecretSecretAccessKey = "secretAccessKey"
)

// S3Config says how to reach object storage.
type S3Config struct {
	// Endpoint is host[:port]: s3.amazonaws.com, minio.example:9000.
	Endpoint string
	// AccessKeyID and SecretAccessKey are the operator's credentials.
	AccessKeyID, SecretAccessKey string
	// Secure uses HTTPS.
	Secure bool
	// Region is the default region of new buckets; empty: DefaultRegion.
	Region string
	// MaxRetries is how often the S3 client retries a failed request
	// itself before the reconcile sees the error; zero: minio-go's default
	// (10). The controller retries failed reconciles with backoff anyway.
	MaxRetries int
}

// NewClient returns an S3 client for the configuration.
func (c S3Config) NewClient() (*minio.Client, error) {
	return minio.New(c.Endpoint, &minio.Options{
		Creds:      credentials.NewStaticV4(c.AccessKeyID, c.SecretAccessKey, ""),
		Secure:     c.Secure,
		Region:     c.region(),
		MaxRetries: c.MaxRetries,
	})
}

// URL is the endpoint as a URL, as consumers get it.
func (c S3Config) URL() string {
	if c.Secure {
		return "https://" + c.Endpoint
	}
	return "http://" + c.Endpoint
}

func (c S3Config) region() string {
	if c.Region != "" {
		return c.Region
	}
	return DefaultRegion
}

// Credentials are an S3 access key.
type Credentials struct {
	AccessKeyID, SecretAccessKey string
}

// Reconciler keeps Buckets and their external buckets in step.
type Reconciler struct {
	// Client reads and writes; SetupWithManager defaults it to the manager's
	// (cached) client.
	Client client.Client
	// S3 reaches object storage.
	S3 S3Config
	// Consumer holds the credentials written into each Bucket's Secret;
	// empty: the operator's own (fine for a demo; in production mint
	// per-bucket credentials, an IAM user or a MinIO service account).
	Consumer Credentials
	// Resync is how often a converged Bucket is compared with object
	// storage; zero means DefaultResync.
	Resync time.Duration
	// Name names the controller; empty means "bucket".
	Name string

	s3         *minio.Client
	reconciler crreconcile.Reconciler
}

// SetupWithManager registers the controller: Buckets, and the Secrets they own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = steady.NewClient(mgr)
	}
	s3, err := r.S3.NewClient()
	if err != nil {
		return fmt.Errorf("bucket: S3 client for %s: %w", r.S3.Endpoint, err)
	}
	r.s3 = s3
	rec, err := reconcile.NewController[v1alpha1.Bucket](mgr, r.reconcile,
		// Persisted before the body runs, so no bucket is created that a
		// deletion could miss; on deletion its cleanup runs instead.
		reconcile.WithFinalizer(Finalizer, finalizer.Func(r.finalize)),
		reconcile.WithReadySummary(conditions.SummaryOptions{
			ConditionTypes:  []string{conditions.Stalled, v1alpha1.ConditionBucketReady, v1alpha1.ConditionCredentialsReady},
			IgnoreIfMissing: []string{conditions.Stalled},
		}),
		reconcile.WithObservedGeneration{}).
		Named(cmp.Or(r.Name, "bucket")).
		Client(r.Client).
		Owns(&corev1.Secret{}).
		Complete()
	r.reconciler = rec
	return err
}

// +kubebuilder:rbac:groups=s3.examples.steadyk8s.io,resources=buckets,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=s3.examples.steadyk8s.io,resources=buckets/status,verbs=get;patch;update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update

// Reconcile brings one Bucket a step further. SetupWithManager must have run.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if r.reconciler == nil {
		return ctrl.Result{}, errors.New("bucket: Reconcile called before SetupWithManager")
	}
	return r.reconciler.Reconcile(ctx, req)
}

// ExternalName is the bucket's name in object storage: spec.bucketName, or
// "<namespace>-<name>".
func ExternalName(b *v1alpha1.Bucket) string {
	if b.Spec.BucketName != "" {
		return b.Spec.BucketName
	}
	return b.Namespace + "-" + b.Name
}

// SecretName is the name of a Bucket's credentials Secret.
func SecretName(b *v1alpha1.Bucket) string { return b.Name + "-credentials" }

// reconcile is the body that reconcile.For runs once the finalizer is on the
// Bucket: it makes object storage match the spec and reports it in status.
func (r *Reconciler) reconcile(ctx context.Context, b *v1alpha1.Bucket) (ctrl.Result, error) {
	name := ExternalName(b)
	if err := s3utils.CheckValidBucketNameStrict(name); err != nil {
		// Bad input: no error, no requeue; a spec change wakes us.
		conditions.MarkStalled(b, "InvalidBucketName", "bucket name %q: %v: set spec.bucketName", name, err)
		conditions.MarkFalse(b, v1alpha1.ConditionBucketReady, "InvalidBucketName", "bucket name %q: %v", name, err)
		return ctrl.Result{}, nil
	}
	conditions.ClearProgress(b)
	b.Status.BucketName = name
	b.Status.Endpoint = r.S3.URL()
	region := b.Spec.Region
	if region == "" {
		region = r.S3.region()
	}

	versioning, err := r.ensureBucket(ctx, b, name, region)
	if err != nil {
		code := s3Code(err, "S3Error")
		conditions.MarkFalse(b, v1alpha1.ConditionBucketReady, code, "%v", err)
		if code == "BucketAlreadyExists" { // someone else's: a new name is needed
			conditions.MarkStalled(b, code, "bucket %q belongs to someone else: set spec.bucketName", name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("bucket %q of Bucket %s/%s: %w", name, b.Namespace, b.Name, err)
	}
	b.Status.Versioning = versioning
	conditions.MarkTrue(b, v1alpha1.ConditionBucketReady, "Available", "bucket %q at %s", name, r.S3.URL())

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Name: SecretName(b)}}
	if _, err := ownership.CreateOrUpdate(ctx, r.Client, b, secret, func() error {
		secret.Type = corev1.SecretTypeOpaque
		secret.Data = r.secretData(name, region) // wholesale: the Secret is ours
		return nil
	}); err != nil {
		conditions.MarkFalse(b, v1alpha1.ConditionCredentialsReady, "SecretFailed", "%v", err)
		return ctrl.Result{}, fmt.Errorf("credentials Secret of Bucket %s/%s: %w", b.Namespace, b.Name, err)
	}
	b.Status.SecretName = secret.Name
	conditions.MarkTrue(b, v1alpha1.ConditionCredentialsReady, "SecretWritten", "Secret %s", secret.Name)

	resync := r.Resync
	if resync == 0 {
		resync = DefaultResync
	}
	return ctrl.Result{RequeueAfter: resync}, nil
}

// ensureBucket creates the bucket when it is missing and sets its versioning;
// it returns the versioning state.
func (r *Reconciler) ensureBucket(ctx context.Context, b *v1alpha1.Bucket, name, region string) (string, error) {
	exists, err := r.s3.BucketExists(ctx, name)
	if err != nil {
		return "", fmt.Errorf("looking up: %w", err)
	}
	if !exists {
		err := r.s3.MakeBucket(ctx, name, minio.MakeBucketOptions{Region: region})
		if err != nil && s3Code(err, "") != "BucketAlreadyOwnedByYou" {
			return "", fmt.Errorf("creating: %w", err)
		}
	}
	cfg, err := r.s3.GetBucketVersioning(ctx, name)
	if err != nil {
		return "", fmt.Errorf("reading versioning: %w", err)
	}
	switch {
	case b.Spec.Versioning && cfg.Status != "Enabled":
		if err := r.s3.EnableVersioning(ctx, name); err != nil {
			return "", fmt.Errorf("enabling versioning: %w", err)
		}
		return "Enabled", nil
	case !b.Spec.Versioning && cfg.Status == "Enabled":
		if err := r.s3.SuspendVersioning(ctx, name); err != nil {
			return "", fmt.Errorf("suspending versioning: %w", err)
		}
		return "Suspended", nil
	}
	return cfg.Status, nil
}

func (r *Reconciler) secretData(name, region string) map[string][]byte {
	id, key := r.Consumer.AccessKeyID, r.Consumer.SecretAccessKey
	if id == "" {
		id, key = r.S3.AccessKeyID, r.S3.SecretAccessKey
	}
	return map[string][]byte{
		SecretEndpoint:        []byte(r.S3.URL()),
		SecretBucket:          []byte(name),
		SecretRegion:          []byte(region),
		SecretAccessKeyID:     []byte(id),
		SecretSecretAccessKey: []byte(key),
	}
}

// finalize is the cleanup of the finalizer: it deletes the external bucket
// (policy Delete) or leaves it (Retain). An error keeps the finalizer, and
// the request is retried with backoff; what it marks on the Bucket is written
// either way.
func (r *Reconciler) finalize(ctx context.Context, obj client.Object) error {
	b := obj.(*v1alpha1.Bucket)
	name := b.Status.BucketName
	if name == "" {
		name = ExternalName(b)
	}
	if s3utils.CheckValidBucketNameStrict(name) != nil {
		return nil // no bucket can have this name: nothing was created
	}
	if b.Spec.DeletionPolicy == v1alpha1.DeletionPolicyRetain {
		conditions.MarkTrue(b, v1alpha1.ConditionDeleting, "Retained", "bucket %q is left in object storage (deletionPolicy Retain)", name)
		return nil
	}
	err := r.s3.RemoveBucket(ctx, name)
	if err != nil && s3Code(err, "") != "NoSuchBucket" {
		conditions.MarkTrue(b, v1alpha1.ConditionDeleting, s3Code(err, "DeleteFailed"), "deleting bucket %q: %v; retrying", name, err)
		return fmt.Errorf("deleting bucket %q of Bucket %s/%s: %w", name, b.Namespace, b.Name, err)
	}
	conditions.MarkTrue(b, v1alpha1.ConditionDeleting, "Deleted", "bucket %q deleted", name)
	return nil
}

// s3Code is the S3 error code of err (BucketNotEmpty, NoSuchBucket, ...), or
// def when it has none.
func s3Code(err error, def string) string {
	var resp minio.ErrorResponse
	if errors.As(err, &resp) && resp.Code != "" {
		return resp.Code
	}
	return def
}

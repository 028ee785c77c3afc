package bucket_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/examples/bucket"
	"github.com/steadyk8s/steady/examples/bucket/api/v1alpha1"
	"github.com/steadyk8s/steady/testenv"
)

var env = testenv.New(
	testenv.WithControllerManager{}, // the garbage collector takes the Secrets of deleted Buckets
	testenv.WithCRDs{Paths: []string{"config/crd"}},
	testenv.WithScheme{Scheme: newScheme()},
)

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := bucket.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

const foreignFinalizer = "example.com/keep"

var controllers atomic.Int64

// harness is the controller under test, in a manager watching the test's
// namespace, with an S3 server of its own.
type harness struct {
	r       *bucket.Reconciler
	cache   client.Client
	counter *testenv.RequestCounter
	s3      *minio.Client // the test's own look at object storage
	s3Calls atomic.Int64  // requests the S3 server received
}

// countS3 counts the requests of the S3 server.
func (h *harness) countS3(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.s3Calls.Add(1)
		next.ServeHTTP(w, r)
	})
}

func start(t *testing.T, ns string, middleware ...func(http.Handler) http.Handler) *harness {
	t.Helper()
	h := &harness{counter: &testenv.RequestCounter{}}
	fake := bucket.NewFakeS3(append([]func(http.Handler) http.Handler{h.countS3}, middleware...)...)
	t.Cleanup(fake.Close)
	fake.S3.MaxRetries = 1 // the failures the tests inject reach the reconcile at once
	s3, err := fake.S3.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	h.s3 = s3
	h.r = &bucket.Reconciler{S3: fake.S3, Name: fmt.Sprintf("bucket-%d", controllers.Add(1))}
	mgr := env.StartManager(t,
		testenv.WithTransport(h.counter.Wrap),
		testenv.WithManagerOptions(ctrl.Options{
			Controller: config.Controller{SkipNameValidation: ptr.To(true)},
			Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		}),
		testenv.WithSetup(h.r.SetupWithManager))
	for _, obj := range []client.Object{&v1alpha1.Bucket{}, &corev1.Secret{}} { // a warm cache
		if _, err := mgr.GetCache().GetInformer(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	h.cache = mgr.GetClient()
	return h
}

func getBucket(ctx context.Context, key types.NamespacedName) (*v1alpha1.Bucket, error) {
	b := &v1alpha1.Bucket{}
	return b, env.Client.Get(ctx, key, b)
}

// wantCondition checks a condition's status and reason (and a message
// fragment) on the Bucket as the API server holds it.
func wantCondition(ctx context.Context, key types.NamespacedName, typ, status, reason, msg string) func() error {
	return func() error {
		b, err := getBucket(ctx, key)
		if err != nil {
			return err
		}
		c := conditions.Get(b, typ)
		if c == nil || string(c.Status) != status || c.Reason != reason || !strings.Contains(c.Message, msg) {
			return fmt.Errorf("condition %s: %+v, want %s/%s %q", typ, c, status, reason, msg)
		}
		return nil
	}
}

func wantReady(ctx context.Context, key types.NamespacedName, versioning string) func() error {
	return func() error {
		if err := wantCondition(ctx, key, conditions.Ready, "True", conditions.ReasonSucceeded, "")(); err != nil {
			return err
		}
		b, _ := getBucket(ctx, key)
		if b.Status.ObservedGeneration != b.Generation || b.Status.Versioning != versioning {
			return fmt.Errorf("status %+v at generation %d, want versioning %q", b.Status, b.Generation, versioning)
		}
		return nil
	}
}

// assertNoWrites reconciles a converged Bucket three times, once the cache has
// caught up, and fails on any write to the API server.
func (h *harness) assertNoWrites(ctx context.Context, t *testing.T, key types.NamespacedName) {
	t.Helper()
	testenv.Eventually(t, "cache caught up", func() error {
		live, err := getBucket(ctx, key)
		if err != nil {
			return err
		}
		cached := &v1alpha1.Bucket{}
		if err := h.cache.Get(ctx, key, cached); err != nil {
			return err
		}
		if cached.ResourceVersion != live.ResourceVersion {
			return fmt.Errorf("cache at %s, API server at %s", cached.ResourceVersion, live.ResourceVersion)
		}
		return nil
	})
	testenv.WaitIdle(t, h.r.Name)
	h.counter.Reset()
	s3Before := h.s3Calls.Load()
	for range 3 {
		if _, err := h.r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	if w := h.counter.Writes(); w != 0 {
		t.Fatalf("3 reconciles of a converged Bucket wrote %d times: %s", w, h.counter)
	}
	t.Logf("3 reconciles of a converged Bucket: 0 writes; API requests %q (reads come from the cache); S3 requests %d",
		h.counter.String(), h.s3Calls.Load()-s3Before)
}

func (h *harness) bucketExists(ctx context.Context, t *testing.T, name string) bool {
	t.Helper()
	ok, err := h.s3.BucketExists(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func updateBucket(ctx context.Context, t *testing.T, key types.NamespacedName, change func(*v1alpha1.Bucket)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		b, err := getBucket(ctx, key)
		if err != nil {
			return err
		}
		change(b)
		return env.Client.Update(ctx, b)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func addForeignCondition(ctx context.Context, t *testing.T, key types.NamespacedName) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		b, err := getBucket(ctx, key)
		if err != nil {
			return err
		}
		b.Status.Conditions = append(b.Status.Conditions, metav1.Condition{
			Type: "example.com/Audited", Status: metav1.ConditionTrue, Reason: "Audited", LastTransitionTime: metav1.Now(),
		})
		return env.Client.Status().Update(ctx, b)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// failDeletes makes the S3 server answer every DELETE with a 500 while
// broken is set: a fault of object storage, not of our code.
func failDeletes(broken *atomic.Bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodDelete && broken.Load() {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusInternalServerError)
				fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>injected</Message></Error>`)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// waitGone waits until the Bucket and its Secret are gone from the API server.
func waitGone(ctx context.Context, t *testing.T, key types.NamespacedName) {
	t.Helper()
	testenv.Eventually(t, "Bucket gone", func() error {
		if _, err := getBucket(ctx, key); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
	testenv.Eventually(t, "Secret collected", func() error {
		err := env.Client.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "-credentials"}, &corev1.Secret{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
}

// TestBucketLifecycle: a Bucket converges in object storage and in its
// Secret, costs no write once converged, turns versioning off again, keeps
// other writers' finalizers and conditions, and leaves nothing behind.
func TestBucketLifecycle(t *testing.T) {
	ctx := t.Context()
	ns := env.Namespace(t)
	h := start(t, ns)

	b := &v1alpha1.Bucket{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "photos"},
		Spec:       v1alpha1.BucketSpec{Versioning: true},
	}
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(b)
	external := ns + "-photos"

	testenv.Eventually(t, "ready", wantReady(ctx, key, "Enabled"))
	got, _ := getBucket(ctx, key)
	if got.Spec.DeletionPolicy != v1alpha1.DeletionPolicyDelete || !controllerutil.ContainsFinalizer(got, bucket.Finalizer) {
		t.Fatalf("defaulted policy %q, finalizers %v", got.Spec.DeletionPolicy, got.Finalizers)
	}
	if !h.bucketExists(ctx, t, external) {
		t.Fatalf("bucket %q not in object storage", external)
	}
	if v, err := h.s3.GetBucketVersioning(ctx, external); err != nil || v.Status != "Enabled" {
		t.Fatalf("versioning %+v, %v", v, err)
	}
	secret := &corev1.Secret{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "photos-credentials"}, secret); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(secret, got) || string(secret.Data[bucket.SecretBucket]) != external ||
		string(secret.Data[bucket.SecretEndpoint]) != got.Status.Endpoint || len(secret.Data[bucket.SecretAccessKeyID]) == 0 {
		t.Fatalf("Secret %+v (owners %+v)", secret.Data, secret.OwnerReferences)
	}
	h.assertNoWrites(ctx, t, key)

	// The external name cannot change under a live bucket (CEL rule).
	renamed := got.DeepCopy()
	renamed.Spec.BucketName = "elsewhere"
	if err := env.Client.Update(ctx, renamed); !apierrors.IsInvalid(err) {
		t.Fatalf("renaming the bucket: %v, want Invalid", err)
	}

	// Another controller's finalizer and condition, meanwhile.
	updateBucket(ctx, t, key, func(b *v1alpha1.Bucket) { controllerutil.AddFinalizer(b, foreignFinalizer) })
	addForeignCondition(ctx, t, key)

	// Removal: versioning off is versioning suspended, in object storage and
	// in status.
	updateBucket(ctx, t, key, func(b *v1alpha1.Bucket) { b.Spec.Versioning = false })
	testenv.Eventually(t, "versioning suspended", wantReady(ctx, key, "Suspended"))
	if v, err := h.s3.GetBucketVersioning(ctx, external); err != nil || v.Status != "Suspended" {
		t.Fatalf("versioning %+v, %v", v, err)
	}
	h.assertNoWrites(ctx, t, key)
	got, _ = getBucket(ctx, key)
	if !controllerutil.ContainsFinalizer(got, foreignFinalizer) || !conditions.IsTrue(got, "example.com/Audited") {
		t.Fatalf("foreign finalizer or condition lost: %v %+v", got.Finalizers, got.Status.Conditions)
	}

	// Deletion: the external bucket goes, our finalizer with it; the
	// foreign one stays until its owner releases it.
	if err := env.Client.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "our finalizer released", func() error {
		b, err := getBucket(ctx, key)
		if err != nil {
			return err
		}
		if controllerutil.ContainsFinalizer(b, bucket.Finalizer) {
			return fmt.Errorf("finalizers %v", b.Finalizers)
		}
		return nil
	})
	if err := wantCondition(ctx, key, v1alpha1.ConditionDeleting, "True", "Deleted", external)(); err != nil {
		t.Fatal(err)
	}
	if h.bucketExists(ctx, t, external) {
		t.Fatalf("bucket %q still in object storage", external)
	}
	updateBucket(ctx, t, key, func(b *v1alpha1.Bucket) { controllerutil.RemoveFinalizer(b, foreignFinalizer) })
	waitGone(ctx, t, key)
	if buckets, err := h.s3.ListBuckets(ctx); err != nil || len(buckets) != 0 {
		t.Fatalf("object storage holds %+v, %v; want nothing", buckets, err)
	}
}

// TestBucketDeletion: the deletion policies, and a delete that fails.
func TestBucketDeletion(t *testing.T) {
	for _, tc := range []struct {
		name       string
		policy     v1alpha1.DeletionPolicy
		withObject bool // the bucket holds an object: S3 refuses to delete it
		broken     bool // object storage answers DELETE with 500 until repaired
		retained   bool // the external bucket outlives the Bucket
	}{
		{name: "Delete", policy: v1alpha1.DeletionPolicyDelete},
		{name: "DeleteNotEmpty", policy: v1alpha1.DeletionPolicyDelete, withObject: true},
		{name: "Delete500", policy: v1alpha1.DeletionPolicyDelete, broken: true},
		{name: "Retain", policy: v1alpha1.DeletionPolicyRetain, withObject: true, retained: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			ns := env.Namespace(t)
			var broken atomic.Bool
			broken.Store(tc.broken)
			h := start(t, ns, failDeletes(&broken))
			b := &v1alpha1.Bucket{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"},
				Spec:       v1alpha1.BucketSpec{BucketName: "data-" + strings.ToLower(tc.name), DeletionPolicy: tc.policy},
			}
			if err := env.Client.Create(ctx, b); err != nil {
				t.Fatal(err)
			}
			key := client.ObjectKeyFromObject(b)
			testenv.Eventually(t, "ready", wantReady(ctx, key, ""))
			if tc.withObject {
				if _, err := h.s3.PutObject(ctx, b.Spec.BucketName, "report.csv", bytes.NewReader([]byte("a,b\n")), 4, minio.PutObjectOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := env.Client.Delete(ctx, b); err != nil {
				t.Fatal(err)
			}

			if tc.broken {
				testenv.Eventually(t, "delete failed", wantCondition(ctx, key, v1alpha1.ConditionDeleting, "True", "InternalError", b.Spec.BucketName))
				got, err := getBucket(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				if !controllerutil.ContainsFinalizer(got, bucket.Finalizer) {
					t.Fatalf("finalizer released while the delete failed: %v", got.Finalizers)
				}
				broken.Store(false) // repaired: the next retry succeeds
			}
			if tc.withObject && !tc.retained {
				// S3 refuses: the finalizer stays, Deleting says why, and
				// the delete is retried with backoff.
				testenv.Eventually(t, "delete refused", wantCondition(ctx, key, v1alpha1.ConditionDeleting, "True", "BucketNotEmpty", b.Spec.BucketName))
				got, err := getBucket(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				if !controllerutil.ContainsFinalizer(got, bucket.Finalizer) {
					t.Fatalf("finalizer released while the bucket could not be deleted: %v", got.Finalizers)
				}
				if !h.bucketExists(ctx, t, b.Spec.BucketName) {
					t.Fatal("bucket gone although S3 refused")
				}
				// The cause goes; a retry, not an event, finishes the job.
				if err := h.s3.RemoveObject(ctx, b.Spec.BucketName, "report.csv", minio.RemoveObjectOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			waitGone(ctx, t, key)
			if got := h.bucketExists(ctx, t, b.Spec.BucketName); got != tc.retained {
				t.Fatalf("bucket in object storage after deletion: %v, want %v", got, tc.retained)
			}
		})
	}
}

// TestBucketStalledName: a derived name S3 cannot take is Stalled, not retried.
func TestBucketStalledName(t *testing.T) {
	ctx := t.Context()
	ns := env.Namespace(t)
	h := start(t, ns)
	b := &v1alpha1.Bucket{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: strings.Repeat("x", 70)}}
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(b)
	testenv.Eventually(t, "stalled", wantCondition(ctx, key, conditions.Stalled, "True", "InvalidBucketName", "set spec.bucketName"))
	if err := wantCondition(ctx, key, conditions.Ready, "False", "InvalidBucketName", "")(); err != nil {
		t.Fatal(err)
	}
	h.assertNoWrites(ctx, t, key)
	// Nothing external to clean up: deletion releases the finalizer at once.
	if err := env.Client.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "gone", func() error {
		if _, err := getBucket(ctx, key); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
}

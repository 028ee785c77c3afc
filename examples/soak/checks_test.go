package soak

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	atv1alpha1 "github.com/steadyk8s/steady/examples/at/api/v1alpha1"
	"github.com/steadyk8s/steady/examples/bucket"
	identityv1alpha1 "github.com/steadyk8s/steady/examples/usernamespace/api/v1alpha1"
)

// TestViolationsAreFound: the soak's checks report what they are meant to
// find, with no manager running: a User never Ready, a finalizer left on a
// deleted At, an orphan (a Secret controlled by a Bucket that does not
// exist; its apiVersion is one the garbage collector cannot resolve, so
// that it leaves it for the check), a duplicate child (two ResourceQuotas of one namespace controlled
// by one User, but not a RoleBinding and a NetworkPolicy) and an object whose other writer's marks are gone. So a soak
// with 0 violations means the checks ran and found none.
func TestViolationsAreFound(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c := env.Client
	fake := bucket.NewFakeS3()
	defer fake.Close()
	s3, err := fake.S3.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	s := &state{c: c, s3: s3}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	create := creator(t, c)

	user := &identityv1alpha1.User{ObjectMeta: metav1.ObjectMeta{Name: "user-9"}, Spec: identityv1alpha1.UserSpec{ClusterRole: "edit"}}
	create(user)
	job := &atv1alpha1.At{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "at-9", Finalizers: []string{OtherFinalizer}},
		Spec: atv1alpha1.AtSpec{Schedule: "2020-01-01T00:00:00Z", Command: "true"}}
	create(job)
	if err := c.Delete(ctx, job); err != nil {
		t.Fatal(err)
	}
	create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "soak-orphan", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "unserved.example.com/v1", Kind: "Bucket", Name: "bucket-9", UID: "no-such-uid", Controller: ptr.To(true)}}}})
	for _, name := range []string{"soak-dup-1", "soak-dup-2"} {
		create(&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: identityv1alpha1.GroupVersion.String(), Kind: "User", Name: user.Name, UID: user.UID, Controller: ptr.To(true)}}}})
	}
	// Two kinds listed unstructured, one of each: not a duplicate.
	userRef := []metav1.OwnerReference{{APIVersion: identityv1alpha1.GroupVersion.String(), Kind: "User", Name: user.Name, UID: user.UID, Controller: ptr.To(true)}}
	create(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "soak-one-rb", OwnerReferences: userRef},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}})
	create(&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "soak-one-np", OwnerReferences: userRef}})
	unmarked := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "soak-unmarked"}}
	create(unmarked)
	s.marked.Store(unmarked.UID, "Secret "+Namespace+"/soak-unmarked")

	got := s.violations(ctx, s.kinds(), Config{Owners: 10})
	t.Logf("violations:\n%s", strings.Join(got, "\n"))
	for _, want := range []string{
		"user user-9: Ready nil",
		"at soak/at-9: still deleting, finalizers [" + OtherFinalizer + "]",
		"orphan: *v1.Secret soak/soak-orphan controlled by Bucket soak/bucket-9",
		"duplicate child: *v1.ResourceQuota soak/soak-dup-1 and *v1.ResourceQuota soak/soak-dup-2 both controlled by User user-9",
		"Secret soak/soak-unmarked: the other writer's label or annotation lost",
	} {
		if !slices.ContainsFunc(got, func(v string) bool { return strings.HasPrefix(v, want) }) {
			t.Errorf("no violation %q", want)
		}
	}
	if slices.ContainsFunc(got, func(v string) bool { return strings.Contains(v, "soak-one-") }) {
		t.Error("a RoleBinding and a NetworkPolicy of one owner reported as duplicates")
	}
}

// creator returns a function that creates an object through c, failing t
// on an error, and deletes it when t ends (its finalizers removed first).
func creator(t *testing.T, c client.Client) func(client.Object) {
	ctx := context.Background()
	var made []client.Object
	t.Cleanup(func() {
		for _, obj := range made {
			if obj.GetFinalizers() != nil {
				_ = c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
				obj.SetFinalizers(nil)
				_ = c.Update(ctx, obj)
			}
			_ = c.Delete(ctx, obj)
		}
	})
	return func(obj client.Object) {
		t.Helper()
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		made = append(made, obj)
	}
}

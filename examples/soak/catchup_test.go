package soak

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/applyset"
	bundlev1alpha1 "github.com/steadyk8s/steady/examples/bundle/api/v1alpha1"
	identityv1alpha1 "github.com/steadyk8s/steady/examples/usernamespace/api/v1alpha1"
)

// hidingReader is a leader's cache that has not seen one object yet: it
// reads the live state, without that object.
type hidingReader struct {
	client.Reader
	hidden client.ObjectKey
	kind   string
}

func (r hidingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if key == r.hidden {
		return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r hidingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := r.Reader.List(ctx, list, opts...); err != nil {
		return err
	}
	items, err := metaItems(list)
	if err != nil {
		return err
	}
	var kept []client.Object
	for _, item := range items {
		if client.ObjectKeyFromObject(item) != r.hidden || kindOf(item) != r.kind {
			kept = append(kept, item)
		}
	}
	switch l := list.(type) {
	case *rbacv1.ClusterRoleList:
		l.Items = nil
		for _, o := range kept {
			l.Items = append(l.Items, *o.(*rbacv1.ClusterRole))
		}
	case *corev1.ConfigMapList:
		l.Items = nil
		for _, o := range kept {
			l.Items = append(l.Items, *o.(*corev1.ConfigMap))
		}
	}
	return nil
}

// TestCacheLagSeesEveryChildKind: the quiet window starts once cacheLag
// finds the leader's cache showing the live state. A child the examples
// make that the cache does not show yet must count as a lag: the User's
// ClusterRole (controlled by the User, cluster-scoped) and a Bundle's
// member (a ConfigMap that is part of the Bundle's ApplySet, by label).
// Were it missed, the window could start while the leader would still
// create that child (a write refused AlreadyExists, as in the flake the
// check was made for), or apply it again.
func TestCacheLagSeesEveryChildKind(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c := env.Client
	s := &state{c: c}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	create := creator(t, c)
	user := &identityv1alpha1.User{ObjectMeta: metav1.ObjectMeta{Name: "user-lag"}, Spec: identityv1alpha1.UserSpec{ClusterRole: "edit"}}
	create(user)
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "soak-lag-cr", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: identityv1alpha1.GroupVersion.String(), Kind: "User", Name: user.Name, UID: user.UID, Controller: ptr.To(true)}}}}
	create(cr)
	b := &bundlev1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "bundle-lag"}}
	create(b)
	member := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "bundle-lag-a",
		Labels: map[string]string{applyset.PartOfLabel: "applyset-lag"}}, Data: map[string]string{"value": "1"}}
	create(member)
	kinds := s.kinds()
	if lag := s.cacheLag(ctx, kinds, c); lag != "" {
		t.Fatalf("the live state against itself: cacheLag = %q, want none", lag)
	}
	for _, tc := range []struct {
		what string
		obj  client.Object
		kind string
	}{
		{"the User's ClusterRole", cr, "*v1.ClusterRole"},
		{"the Bundle's member ConfigMap", member, "*v1.ConfigMap"},
	} {
		leader := hidingReader{Reader: c, hidden: client.ObjectKeyFromObject(tc.obj), kind: tc.kind}
		if lag := s.cacheLag(ctx, kinds, leader); lag == "" {
			t.Errorf("a leader's cache without %s: cacheLag found no lag; the quiet window would start", tc.what)
		} else {
			t.Logf("without %s: %s", tc.what, lag)
		}
	}
}

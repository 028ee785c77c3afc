package ownership

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/steadyk8s/steady/internal/scope"
)

// TestScopeRememberedForTheKindAsked: what validateScope remembers is
// remembered for the kind the REST mapper was asked about. A typed child
// whose type meta names another kind (a ConfigMap carrying ClusterRole's)
// is asked about as its Go type, a ConfigMap: that answer must not make a
// ClusterRole given a namespaced owner pass without the mapper's word.
func TestScopeRememberedForTheKindAsked(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := rbacv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	mapper.Add(rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), meta.RESTScopeRoot)
	direct := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).Build()
	c := scope.Wrap(direct, scope.New(direct, nil, nil)) // remembers what it learns
	ctx := context.Background()
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "o", UID: "u-1"}}

	odd := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "c"}}
	odd.SetGroupVersionKind(schema.GroupVersionKind{Group: rbacv1.GroupName, Version: "v1", Kind: "ClusterRole"})
	if err := validateScope(ctx, c, owner, odd); err != nil {
		t.Fatalf("a ConfigMap (of odd type meta): %v", err)
	}
	var ioe *invalidOwnerError
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "r"}}
	if err := validateScope(ctx, c, owner, cr); !errors.As(err, &ioe) {
		t.Fatalf("a ClusterRole with a namespaced owner: %v, want *invalidOwnerError", err)
	}
}

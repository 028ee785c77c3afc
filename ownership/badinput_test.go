package ownership_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
)

// TestBadOwnerInput: references the API server or the garbage collector
// would not honour, and a child another owner controls, are typed errors
// naming the owner, the child ("Kind namespace/name") and the field, from
// CreateOrUpdate, Apply and SetControllerReference alike;
// the API server shows nothing written: no child created, an existing one
// unchanged.
func TestBadOwnerInput(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns, other := env.Namespace(t), env.Namespace(t)
	o, a := owner(t, ns, "o"), owner(t, ns, "a")
	// theirs is controlled by a.
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "theirs"}, Data: map[string]string{"k": "a"}}
	if _, err := ownership.CreateOrUpdate(ctx, remembering(), a, theirs, nil); err != nil {
		t.Fatal(err)
	}
	role := "steady-badinput-" + ns
	for _, tc := range []struct {
		name  string
		owner client.Object
		child func() client.Object
		// want: "Field" of an *InvalidOwnerError, or "" for an
		// *AlreadyOwnedError.
		field string
		// inMemory: SetControllerReference can tell without the API
		// server's scope of the child.
		inMemory bool
	}{
		{"owner in another namespace", o, func() client.Object {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "x"}}
		}, "metadata.namespace", true},
		{"namespaced owner of a cluster-scoped child", o, func() client.Object {
			return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}}
		}, "metadata.namespace", true},
		{"cluster-scoped child given the owner's namespace", o, func() client.Object {
			return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role}}
		}, "metadata.namespace", false},
		{"owner not created yet (no UID)", &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ghost"}}, func() client.Object {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}}
		}, "metadata.uid", true},
		{"child controlled by another owner", o, func() client.Object {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "theirs"}}
		}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(op string, child client.Object, err error) {
				t.Helper()
				var ioe *ownership.InvalidOwnerError
				var aoe *ownership.AlreadyOwnedError
				want := "ConfigMap "
				if _, ok := child.(*rbacv1.ClusterRole); ok {
					want = "ClusterRole "
				}
				if child.GetNamespace() != "" {
					want += child.GetNamespace() + "/"
				}
				want += child.GetName()
				switch {
				case tc.field != "" && (!errors.As(err, &ioe) || ioe.Field != tc.field || ioe.Child != want ||
					!strings.Contains(err.Error(), "field "+tc.field) || !strings.Contains(err.Error(), ioe.Owner)):
					t.Errorf("%s: %v; want an *InvalidOwnerError naming %s and field %s", op, err, want, tc.field)
				case tc.field == "" && (!errors.As(err, &aoe) || aoe.Child != want || aoe.Controller != "Widget a" ||
					aoe.Owner != "Widget "+ns+"/o" || !strings.Contains(err.Error(), want)):
					t.Errorf("%s: %v; want an *AlreadyOwnedError naming %s", op, err, want)
				}
			}
			n.Reset()
			for _, fn := range allFns {
				child := tc.child()
				_, err := fn.fn(ctx, c, tc.owner, child, func() error {
					if cm, ok := child.(*corev1.ConfigMap); ok {
						cm.Data = map[string]string{"k": "o"}
					}
					return nil
				})
				check(fn.name, child, err)
			}
			if tc.inMemory {
				child := tc.child()
				if tc.field == "" { // as read
					if err := env.Client.Get(ctx, client.ObjectKeyFromObject(child), child); err != nil {
						t.Fatal(err)
					}
				}
				refs := child.GetOwnerReferences()
				changed, err := ownership.SetControllerReference(tc.owner, child, env.Scheme)
				check("SetControllerReference", child, err)
				if changed || !equality.Semantic.DeepEqual(child.GetOwnerReferences(), refs) {
					t.Errorf("SetControllerReference changed the child: %v", child.GetOwnerReferences())
				}
			}
			if n.Writes() != 0 {
				t.Errorf("requests %s: a refusal wrote", n)
			}
			// The API server agrees: nothing created, theirs unchanged.
			for _, o := range []client.Object{
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "x"}},
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}},
				&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}},
			} {
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
					t.Errorf("%T %s: %v; want NotFound", o, client.ObjectKeyFromObject(o), err)
				}
			}
			got := &corev1.ConfigMap{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(theirs), got); err != nil {
				t.Fatal(err)
			}
			if got.ResourceVersion != theirs.ResourceVersion || !metav1.IsControlledBy(got, a) || len(got.OwnerReferences) != 1 {
				t.Errorf("the other owner's child was written: %v, owners %v", got.Data, got.OwnerReferences)
			}
		})
	}
}

// TestExistingClusterScopedChildGivenANamespaceIsAnInvalidOwnerError: the
// scope check now runs only before a write; a cluster-scoped child that
// exists, given the owner's namespace, reads back without one. The call
// must still answer *InvalidOwnerError (as it did before the scope check
// moved), not a complaint that mutate changed the namespace, and write
// nothing.
func TestExistingClusterScopedChildGivenANamespaceIsAnInvalidOwnerError(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "o")
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "steady-test-exists-" + ns}}
	if err := env.Client.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cr) })
	for _, fn := range fns {
		// mutate leaves the namespace as read (none), or sets the owner's
		// again (the scope check before the write refuses it then).
		for _, setsNamespace := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, mutate sets the namespace: %t", fn.name, setsNamespace), func(t *testing.T) {
				n.Reset()
				child := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cr.Name}}
				var mutate ownership.MutateFn
				if setsNamespace {
					mutate = func() error { child.Namespace = ns; child.Labels = map[string]string{"a": "b"}; return nil }
				}
				_, err := fn.fn(ctx, c, o, child, mutate)
				var ioe *ownership.InvalidOwnerError
				if !errors.As(err, &ioe) {
					t.Errorf("error = %v, want *InvalidOwnerError", err)
				}
				if n.Writes() != 0 {
					t.Errorf("requests %s, want no write", n)
				}
			})
		}
	}
}

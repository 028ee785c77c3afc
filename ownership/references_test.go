package ownership_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
)

func TestAnotherControllersChildIsNotStolen(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	a, b := owner(t, ns, "a"), owner(t, ns, "b")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}}
	if _, err := ownership.CreateOrUpdate(ctx, c, a, cm, nil); err != nil {
		t.Fatal(err)
	}
	n.Reset()
	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}}
	_, err := ownership.CreateOrUpdate(ctx, c, b, cm, func() error { cm.Data = map[string]string{"k": "v"}; return nil })
	var aoe *ownership.AlreadyOwnedError
	if !errors.As(err, &aoe) || aoe.Controller != "Widget a" || aoe.Owner != "Widget "+ns+"/b" || aoe.Child != "ConfigMap "+ns+"/shared" {
		t.Fatalf("error = %v, want an AlreadyOwnedError naming both owners", err)
	}
	if n.Writes() != 0 {
		t.Errorf("requests %s: a refused adoption wrote", n)
	}
	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}}
	if op, err := ownership.CreateOrUpdate(ctx, c, b, cm, nil, ownership.Adopt{}); err != nil || op != controllerutil.OperationResultUpdated {
		t.Fatalf("adopt: %s, %v", op, err)
	}
	var got corev1.ConfigMap
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &got)
	if !metav1.IsControlledBy(&got, b) || len(got.OwnerReferences) != 1 {
		t.Errorf("after adoption: owners %v", got.OwnerReferences)
	}
}

func TestInvalidReferencesAreRefusedBeforeAnyWrite(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns, other := env.Namespace(t), env.Namespace(t)
	o := owner(t, ns, "o")
	noUID := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ghost"}}
	for _, tc := range []struct {
		name  string
		owner client.Object
		child client.Object
		gets  int // the scope of a kind is asked (of the REST mapper) after the read, before a write
	}{
		{"owner without UID", noUID, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}}, 0},
		{"owner in another namespace", o, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "x"}}, 0},
		{"namespaced owner of a cluster-scoped child", o, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "steady-test-x"}}, 0},
		{"namespaced owner of a cluster-scoped child given its namespace", o, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "steady-test-y"}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n.Reset()
			_, err := ownership.CreateOrUpdate(ctx, c, tc.owner, tc.child, nil)
			var ioe *ownership.InvalidOwnerError
			if !errors.As(err, &ioe) {
				t.Errorf("error = %v, want *InvalidOwnerError", err)
			}
			_, err = applyObject(ctx, c, tc.owner, tc.child, "steady-test")
			if !errors.As(err, &ioe) {
				t.Errorf("Apply error = %v, want *InvalidOwnerError", err)
			}
			if n.Writes() != 0 || n.Get("GET") != tc.gets {
				t.Errorf("requests %s before refusing, want %d GETs and no write", n, tc.gets)
			}
		})
	}
}

func TestNonControllerReferences(t *testing.T) {
	env.Require(t)
	ns := env.Namespace(t)
	a, b := owner(t, ns, "a"), owner(t, ns, "b")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns}}
	if ok, err := ownership.SetControllerReference(a, cm, env.Scheme); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := controllerutil.SetOwnerReference(b, cm, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if !ownership.RemoveOwnerReference(b, cm) || ownership.RemoveOwnerReference(b, cm) || len(cm.OwnerReferences) != 1 {
		t.Errorf("RemoveOwnerReference: %v", cm.OwnerReferences)
	}
}

// TestReferencesTheGarbageCollectorWouldMisreadAreRefused: as
// controllerutil's do, the controller reference of the write calls refuses
// an owner in another namespace (the garbage collector looks the owner up
// in the child's namespace, finds nothing and deletes the child), a
// namespaced owner of a child without a namespace, and an owner without a
// UID, and leave the child as it was.
func TestReferencesTheGarbageCollectorWouldMisreadAreRefused(t *testing.T) {
	env.Require(t)
	o := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "o", UID: "1"}}
	noUID := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "o"}}
	for _, tc := range []struct {
		name         string
		owner, child client.Object
	}{
		{"owner in another namespace", o, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "c"}}},
		{"child without a namespace", o, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}},
		{"owner without a UID", noUID, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "c"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changed, err := ownership.SetControllerReference(tc.owner, tc.child, env.Scheme)
			var ioe *ownership.InvalidOwnerError
			if !errors.As(err, &ioe) || changed || len(tc.child.GetOwnerReferences()) != 0 {
				t.Errorf("%v, %v, references %v; want an *InvalidOwnerError and no change", changed, err, tc.child.GetOwnerReferences())
			}
		})
	}
	// A cluster-scoped owner can own a namespaced child.
	cluster := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "o", UID: "2"}}
	if ok, err := ownership.SetControllerReference(cluster, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "c"}}, env.Scheme); !ok || err != nil {
		t.Errorf("cluster-scoped owner: %v, %v", ok, err)
	}
}

// TestARecreatedChildOfAnotherOwnerIsNotWritten: our child was deleted and
// created again by another owner while the cache (held 300ms back) still
// shows ours: a write based on that read must not land on the other
// owner's child, for CreateOrUpdate and Apply. Without an API reader the
// write's lock (CreateOrUpdate's resourceVersion) is a conflict to requeue
// on; with one (steady.NewClient's), the child read again through it is
// the other owner's: an *AlreadyOwnedError, or the conflict. The other
// owner's child sets the field ours set (Apply: a field manager conflict)
// or another one only (Apply, unlocked on a child the read shows ours, is
// refused by the API server for a second controller reference: that is a
// stale read too, read again and refused as another owner's).
func TestARecreatedChildOfAnotherOwnerIsNotWritten(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startCached(t)
	ns := env.Namespace(t)
	a, b := owner(t, ns, "a"), owner(t, ns, "b")
	for _, fn := range allFns {
		for _, tc := range []struct {
			withReader bool
			theirKey   string
		}{{false, "k"}, {true, "k"}, {false, "j"}, {true, "j"}} {
			withReader := tc.withReader
			t.Run(fmt.Sprintf("%s/APIReader=%v/theirs=%s", fn.name, withReader, tc.theirKey), func(t *testing.T) {
				c := cc.CacheOnly
				if withReader {
					c = cc.Client
				}
				name := fmt.Sprintf("cm-%s-%v-%s", strings.ToLower(fn.name), withReader, tc.theirKey)
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				if _, err := fn.fn(ctx, env.Client, a, cm, func() error { cm.Data = map[string]string{"k": "a1"}; return nil }); err != nil {
					t.Fatal(err)
				}
				cachedSees(t, cc, cm)
				if err := env.Client.Delete(ctx, cm); err != nil {
					t.Fatal(err)
				}
				theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				if _, err := ownership.CreateOrUpdate(ctx, remembering(), b, theirs, func() error { theirs.Data = map[string]string{tc.theirKey: "b"}; return nil }); err != nil {
					t.Fatal(err)
				}
				cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				op, err := fn.fn(ctx, c, a, cm, func() error { cm.Data = map[string]string{"k": "a2"}; return nil })
				var got corev1.ConfigMap
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
					t.Fatal(err)
				}
				t.Logf("%q, %v; stored %v, owners %v", op, err, got.Data, got.OwnerReferences)
				if !reflect.DeepEqual(got.Data, map[string]string{tc.theirKey: "b"}) || !metav1.IsControlledBy(&got, b) || got.UID != theirs.UID {
					t.Errorf("the other owner's child was written: %v, owners %v (%q, %v)", got.Data, got.OwnerReferences, op, err)
				}
				var aoe *ownership.AlreadyOwnedError
				if err == nil || !apierrors.IsConflict(err) && !errors.As(err, &aoe) {
					t.Errorf("%q, %v; want a conflict or an *AlreadyOwnedError", op, err)
				}
				if op != "" {
					t.Errorf("result %q beside the error, want empty", op)
				}
			})
		}
	}
}

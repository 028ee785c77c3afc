package reconcile_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/reconcile"
)

// TestForBodyChildReadWithoutGetPermission: review of For handing its API
// reader to the body's ownership calls. ownership documents that a typed
// child is read from a manager's cache, so that list and watch on its kind
// are the permissions it needs; an operator granted list, watch, create,
// update and patch on ConfigMaps (no get) has its API reader's GET of a
// ConfigMap refused. A child the cache does not show yet (created a moment
// ago, the cache 300 ms behind) made the body's CreateOrUpdate and Apply
// wait for the cache and succeed; the re-read through For's reader must not
// turn that into a Forbidden error for every such reconcile.
func TestForBodyChildReadWithoutGetPermission(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 300 * time.Millisecond,
		Informers: []client.Object{&testapi.Widget{}, &corev1.ConfigMap{}}})
	ns := env.Namespace(t)
	user := "no-get-" + ns
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch", "create", "update", "patch"}},
		{APIGroups: []string{"test.steady.dev"}, Resources: []string{"widgets", "widgets/status"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
	}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	for _, o := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	api, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	for i, call := range []string{"CreateOrUpdate", "Apply"} {
		t.Run(call, func(t *testing.T) {
			owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("noget-%d", i)}, Spec: testapi.WidgetSpec{Size: 1}}
			if err := env.Client.Create(ctx, owner); err != nil {
				t.Fatal(err)
			}
			waitCached(t, cc.Client, owner, owner.ResourceVersion)
			c := cc.Reading(api) // the manager's client, with the reader without get
			r, err := reconcile.For(c, func(ctx context.Context, w *testapi.Widget) (ctrl.Result, error) {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: w.Name + "-child"}}
				if call == "CreateOrUpdate" {
					_, err := ownership.CreateOrUpdate(ctx, c, w, cm, func() error {
						cm.Data = map[string]string{"k": "v"}
						return nil
					})
					return ctrl.Result{}, err
				}
				cm.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
				cm.Data = map[string]string{"k": "v"}
				_, err := applyObject(ctx, c, w, cm, "review7")
				return ctrl.Result{}, err
			})
			if err != nil {
				t.Fatal(err)
			}
			// The child exists, and the cache does not show it yet.
			child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: owner.Name + "-child"}, Data: map[string]string{"k": "v"}}
			if err := controllerutil.SetControllerReference(owner, child, env.Scheme); err != nil {
				t.Fatal(err)
			}
			if err := env.Client.Create(ctx, child); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(owner)})
			t.Logf("reconciled in %v: %v", time.Since(start), err)
			if err != nil {
				t.Fatalf("a child the cache shows 300 ms late, For's API reader without get on it: %v", err)
			}
		})
	}
}

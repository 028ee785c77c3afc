package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/reconcile"
)

// staleOwnerClient is a cached client whose cache still shows a deleted
// incarnation of one Widget (the Widget informer lags behind the
// ConfigMap one).
type staleOwnerClient struct {
	client.Client
	owner *testapi.Widget
}

func (c *staleOwnerClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if w, ok := obj.(*testapi.Widget); ok && key == client.ObjectKeyFromObject(c.owner) {
		*w = *c.owner.DeepCopy()
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// TestForBodyChecksAStaleOwnerThroughTheAPIReader: review of ownerIsCurrent
// reading through For's API reader in a For body. The owner was deleted
// and made again under its name; its child already carries the new
// incarnation's controller reference. A reconcile that starts from a cache
// still showing the deleted incarnation must not put the deleted owner's
// reference back on the child (the garbage collector would then delete
// it): the body's CreateOrUpdate finds, through the API reader, that the
// owner it was given is stale, and fails with a conflict. (Before For
// handed its reader on, the owner was checked through the same lagging
// cache, which vouched for it.)
func TestForBodyChecksAStaleOwnerThroughTheAPIReader(t *testing.T) {
	env.Require(t)
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Informers: []client.Object{&testapi.Widget{}, &corev1.ConfigMap{}}})
	for _, call := range []string{"CreateOrUpdate", "Apply"} {
		t.Run(call, func(t *testing.T) { staleOwnerInForBody(t, cc, call, true) })
		// Without the record, the reference of another Widget of the name
		// cannot be told stale: the child is refused as another owner's,
		// and the error says which UIDs differ, not to adopt it.
		t.Run(call+" without RecordOwner", func(t *testing.T) { staleOwnerInForBody(t, cc, call, false) })
	}
}

func staleOwnerInForBody(t *testing.T, cc *testapi.Cached, call string, record bool) {
	var opts []ownership.MutateOption
	var applyOpts []ownership.ApplyOption
	if record {
		opts, applyOpts = append(opts, ownership.RecordOwner{}), append(applyOpts, ownership.RecordOwner{})
	}
	ctx := context.Background()
	ns := env.Namespace(t)
	first := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reborn"}, Spec: testapi.WidgetSpec{Size: 1}}
	if err := env.Client.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	deleted := first.DeepCopy()
	if err := env.Client.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	second := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reborn"}, Spec: testapi.WidgetSpec{Size: 2}}
	if err := env.Client.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reborn-child"}}
	// The owner record (RecordOwner) is what tells a stale reference of
	// the owner's own kind and name from another owner's.
	if _, err := ownership.CreateOrUpdate(ctx, env.Client, second, cm, func() error {
		cm.Data = map[string]string{"size": "2"}
		return nil
	}, opts...); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := &corev1.ConfigMap{}
		if cc.Client.Get(ctx, client.ObjectKeyFromObject(cm), got) == nil && got.ResourceVersion == cm.ResourceVersion {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cache never showed the child")
		}
		time.Sleep(10 * time.Millisecond)
	}
	c := reading(&staleOwnerClient{Client: cc.Client, owner: deleted}, cc.APIReader)
	var childErr error
	r, err := reconcile.For(c, func(ctx context.Context, w *testapi.Widget) (ctrl.Result, error) {
		child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cm.Name}}
		mutate := func() error {
			child.Data = map[string]string{"size": "1"}
			return nil
		}
		switch call {
		case "CreateOrUpdate":
			_, childErr = ownership.CreateOrUpdate(ctx, c, w, child, mutate, opts...)
		default:
			child.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
			_ = mutate()
			_, childErr = applyObject(ctx, c, w, child, "review7", applyOpts...)
		}
		return ctrl.Result{}, childErr
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(second)})
	t.Logf("reconcile from the deleted incarnation: %v", err)
	live := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), live); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(live); ref == nil || ref.UID != second.UID {
		t.Fatalf("child controlled by %v, want the live owner (UID %s); the deleted one was %s", ref, second.UID, deleted.UID)
	}
	if !record {
		var owned *ownership.AlreadyOwnedError
		msg := fmt.Sprint(childErr)
		if !errors.As(childErr, &owned) || !strings.Contains(msg, string(second.UID)) || !strings.Contains(msg, string(deleted.UID)) || strings.Contains(msg, "Adopt") {
			t.Errorf("%s: %v, want an AlreadyOwnedError naming both UIDs, not advising Adopt", call, childErr)
		}
		return
	}
	if !apierrors.IsConflict(childErr) {
		t.Errorf("%s: %v, want a conflict (the owner passed is stale)", call, childErr)
	}
}

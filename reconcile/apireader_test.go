package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/reconcile"
)

// countingReader counts the GETs through a reader.
type countingReader struct {
	client.Reader
	gets int
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.gets++
	return r.Reader.Get(ctx, key, obj, opts...)
}

// hidingClient is a cached client that does not show one object yet: its
// reads of it answer NotFound.
type hidingClient struct {
	client.Client
	hidden client.ObjectKey
}

func (c *hidingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.ConfigMap); ok && key == c.hidden {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// TestForHandsItsAPIReaderToOwnership: a child that exists, but that the
// manager's cache does not show (as after an API server restart, while the
// informers list again), makes ownership.CreateOrUpdate's create answer
// AlreadyExists. In a For body using a client of For's cluster (For's own,
// or one wrapping it), the child is then read with one GET through For's
// API reader and the reconcile succeeds; with another cluster's client
// (here a client of its own REST mapper) the reader is not used, and the
// call fails as before, after reading the client again.
func TestForHandsItsAPIReaderToOwnership(t *testing.T) {
	env.Require(t)
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Informers: []client.Object{&testapi.Widget{}, &corev1.ConfigMap{}}})
	ctx := context.Background()
	ns := env.Namespace(t)
	other, err := client.New(env.Config, client.Options{Scheme: cc.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		name   string
		body   func(fors client.Client, hidden client.ObjectKey) client.Client
		reader bool
	}{
		{"For's client", func(fors client.Client, _ client.ObjectKey) client.Client { return fors }, true},
		{"For's client wrapped", func(fors client.Client, _ client.ObjectKey) client.Client {
			return client.WithFieldOwner(fors, "another")
		}, true},
		{"another cluster's client", func(_ client.Client, hidden client.ObjectKey) client.Client {
			return &hidingClient{Client: other, hidden: hidden}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("owner-%d", i)}, Spec: testapi.WidgetSpec{Size: 1}}
			if err := env.Client.Create(ctx, owner); err != nil {
				t.Fatal(err)
			}
			child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: owner.Name + "-child"}, Data: map[string]string{"k": "v"}}
			if err := controllerutil.SetControllerReference(owner, child, env.Client.Scheme()); err != nil {
				t.Fatal(err)
			}
			if err := env.Client.Create(ctx, child); err != nil {
				t.Fatal(err)
			}
			// The cache shows the owner but not the child: its reads of
			// the child answer NotFound.
			api := &countingReader{Reader: cc.APIReader}
			c := reading(&hidingClient{Client: cc.Client, hidden: client.ObjectKeyFromObject(child)}, api)
			body := tc.body(c, client.ObjectKeyFromObject(child))
			var op controllerutil.OperationResult
			r, err := reconcile.For(c, func(ctx context.Context, w *testapi.Widget) (ctrl.Result, error) {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: child.Name}}
				var err error
				op, err = ownership.CreateOrUpdate(ctx, body, w, cm, func() error {
					cm.Data = map[string]string{"k": "v"}
					return nil
				}, ownership.RecordOwner{})
				return ctrl.Result{}, err
			})
			if err != nil {
				t.Fatal(err)
			}
			waitCached(t, cc.Client, owner, owner.ResourceVersion)
			start := time.Now()
			_, err = r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(owner)})
			t.Logf("%s: %s, %v; %d GETs through the API reader, in %v", tc.name, op, err, api.gets, time.Since(start))
			if tc.reader {
				// Updated: the child, made without steady, gets its owner
				// record (RecordOwner).
				if err != nil || op != controllerutil.OperationResultUpdated || api.gets != 1 {
					t.Fatalf("got %q, %v, %d GETs through For's API reader; want updated, no error, 1 GET", op, err, api.gets)
				}
				return
			}
			if err == nil || !apierrors.IsAlreadyExists(err) || !strings.Contains(err.Error(), "did not show it") || api.gets != 0 {
				t.Fatalf("got %q, %v, %d GETs through For's API reader; want the AlreadyExists error after reading the client again, 0 GETs", op, err, api.gets)
			}
		})
	}
}

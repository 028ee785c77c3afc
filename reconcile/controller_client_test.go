package reconcile_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
	"github.com/steadyk8s/steady/testenv"
)

// readsAndStatus counts the reads and the status writes made through it.
type readsAndStatus struct {
	client.Client
	gets, status atomic.Int32
}

func (c *readsAndStatus) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets.Add(1)
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *readsAndStatus) Status() client.SubResourceWriter {
	c.status.Add(1)
	return c.Client.Status()
}

// TestControllerClient: a controller given a client with Client reads the
// object and writes its status through that client, not the manager's.
func TestControllerClient(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	var given *readsAndStatus
	testapi.StartManager(t, env, testapi.ManagerOptions{
		Namespace: ns,
		Informers: []client.Object{&testapi.Widget{}},
		Setup: func(mgr ctrl.Manager) error {
			given = &readsAndStatus{Client: mgr.GetClient()}
			_, err := reconcile.NewController[testapi.Widget](mgr, func(_ context.Context, w *testapi.Widget) (ctrl.Result, error) {
				w.Status.Phase = "Reconciled"
				return ctrl.Result{}, nil
			}).Named("client-" + ns).Client(given).Complete()
			return err
		},
	})
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the Widget reconciled", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
			return err
		}
		if w.Status.Phase != "Reconciled" {
			return errors.New("status.phase is " + w.Status.Phase)
		}
		return nil
	})
	if given.gets.Load() == 0 || given.status.Load() == 0 {
		t.Errorf("through the client given: %d reads, %d status writers; want both", given.gets.Load(), given.status.Load())
	}
}

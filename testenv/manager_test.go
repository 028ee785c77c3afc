package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steadyk8s/steady/testenv"
)

// The documented pattern, StartManager in every test with the same
// controllers, works in many tests of one process (and so with
// go test -count=2): controller-runtime's check that a controller name is
// unique in the process is off for managers StartManager makes.
func TestStartManagerInEveryTest(t *testing.T) {
	env.Require(t)
	for i := range 3 {
		t.Run(fmt.Sprintf("test %d", i), func(t *testing.T) {
			env.StartManager(t, testenv.WithSetup(func(mgr ctrl.Manager) error {
				return ctrl.NewControllerManagedBy(mgr).Named("configmaps").For(&corev1.ConfigMap{}).
					Complete(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
						return reconcile.Result{}, nil
					}))
			}))
		})
	}
}

// WaitIdle does not return while a reconcile is due: one that returned
// RequeueAfter 500ms, or an error (the rate limiter's backoff), is run
// again before WaitIdle says idle; the reconciles after it are none.
func TestWaitIdleWaitsForADueRequeue(t *testing.T) {
	env.Require(t)
	for _, tc := range []struct {
		name  string
		first func() (reconcile.Result, error)
	}{
		{"requeue after 500ms", func() (reconcile.Result, error) { return reconcile.Result{RequeueAfter: 500 * time.Millisecond}, nil }},
		{"error", func() (reconcile.Result, error) { return reconcile.Result{}, errors.New("transient") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			name := "due-" + strings.ReplaceAll(tc.name, " ", "-")
			var runs atomic.Int64
			env.StartManager(t, testenv.WithSetup(func(mgr ctrl.Manager) error {
				return ctrl.NewControllerManagedBy(mgr).Named(name).For(&corev1.ConfigMap{}).
					Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
						if req.Namespace != ns {
							return reconcile.Result{}, nil
						}
						if runs.Add(1) == 1 {
							return tc.first()
						}
						return reconcile.Result{}, nil
					}))
			}))
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}}
			if err := env.Client.Create(context.Background(), cm); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, "the first reconcile", func() error {
				if runs.Load() == 0 {
					return errors.New("not yet")
				}
				return nil
			})
			testenv.WaitIdle(t, name)
			if n := runs.Load(); n < 2 {
				t.Errorf("WaitIdle returned after %d reconciles, with the second still due", n)
			}
		})
	}
}

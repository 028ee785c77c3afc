package testenv_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
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

package steady_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/steadyk8s/steady"
	"github.com/steadyk8s/steady/reconcile"
)

// One steady client per manager, handed to each reconciler: what it
// remembers (the writes of this process the cache has not shown yet, the
// verdicts on children) follows the manager's informers.
func ExampleNewClient() {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		fmt.Println(err)
		return
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	c := steady.NewClient(mgr)
	r, err := reconcile.For(c, func(ctx context.Context, cm *corev1.ConfigMap) (ctrl.Result, error) {
		cm.Labels = map[string]string{"seen": "true"}
		return ctrl.Result{}, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(r); err != nil {
		fmt.Println(err)
		return
	}
	_ = mgr.Start(ctrl.SetupSignalHandler())
}

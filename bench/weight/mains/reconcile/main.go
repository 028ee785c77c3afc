// Command reconcile weighs steady's reconcile package on the baseline.
package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steadyk8s/steady"
	"github.com/steadyk8s/steady/reconcile"

	"github.com/steadyk8s/steady/bench/weight/base"
)

func main() {
	base.Main(func(mgr ctrl.Manager) crreconcile.Reconciler {
		c := steady.NewClient(mgr)
		return crreconcile.Func(func(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
			cm := &corev1.ConfigMap{}
			if err := mgr.GetClient().Get(ctx, req.NamespacedName, cm); err != nil {
				return ctrl.Result{}, client.IgnoreNotFound(err)
			}
			p, err := reconcile.NewPatcher(c, cm)
			if err != nil {
				return ctrl.Result{}, err
			}
			defer p.PatchOnExit(ctx, cm, nil, &reterr)
			cm.Labels = map[string]string{"seen": "yes"}
			return ctrl.Result{}, nil
		})
	})
}

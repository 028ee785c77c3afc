// Command finalizer weighs steady's finalizer package on the baseline.
package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steadyk8s/steady"
	"github.com/steadyk8s/steady/finalizer"

	"github.com/steadyk8s/steady/bench/weight/base"
)

func main() {
	base.Main(func(mgr ctrl.Manager) crreconcile.Reconciler {
		h := finalizer.NewHandler(steady.NewClient(mgr))
		_ = h.Register("example.com/cleanup", finalizer.Func(func(context.Context, client.Object) error { return nil }))
		return crreconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
			cm := &corev1.ConfigMap{}
			if err := mgr.GetClient().Get(ctx, req.NamespacedName, cm); err != nil {
				return ctrl.Result{}, client.IgnoreNotFound(err)
			}
			res, err := h.Handle(ctx, cm)
			return ctrl.Result{RequeueAfter: res.RequeueAfter}, err
		})
	})
}

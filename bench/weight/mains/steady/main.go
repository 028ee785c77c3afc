// Command steady weighs steady's reconcile, conditions, finalizer and
// ownership together on the baseline.
package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steadyk8s/steady"
	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/finalizer"
	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/reconcile"

	"github.com/steadyk8s/steady/bench/weight/base"
)

func main() {
	base.Main(func(mgr ctrl.Manager) crreconcile.Reconciler {
		c := steady.NewClient(mgr)
		h := finalizer.NewHandler(c)
		_ = h.Register("example.com/cleanup", finalizer.Func(func(context.Context, client.Object) error { return nil }))
		return crreconcile.Func(func(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
			owner := &corev1.ConfigMap{}
			if err := mgr.GetClient().Get(ctx, req.NamespacedName, owner); err != nil {
				return ctrl.Result{}, client.IgnoreNotFound(err)
			}
			if res, err := h.Handle(ctx, owner); err != nil || res.Deleting {
				return ctrl.Result{RequeueAfter: res.RequeueAfter}, err
			}
			p, err := reconcile.NewPatcher(c, owner)
			if err != nil {
				return ctrl.Result{}, err
			}
			defer p.PatchOnExit(ctx, owner, nil, &reterr)
			var obj conditions.Setter
			if obj != nil {
				conditions.MarkTrue(obj, "Ready", "Reconciled", "")
			}
			child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name + "-child"}}
			_, err = ownership.CreateOrUpdate(ctx, mgr.GetClient(), owner, child, func() error { return nil })
			return ctrl.Result{}, err
		})
	})
}

// Command ownership weighs steady's ownership package on the baseline.
package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steadyk8s/steady/ownership"

	"github.com/steadyk8s/steady/bench/weight/base"
)

func main() {
	base.Main(func(mgr ctrl.Manager) crreconcile.Reconciler {
		return crreconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
			owner := &corev1.ConfigMap{}
			if err := mgr.GetClient().Get(ctx, req.NamespacedName, owner); err != nil {
				return ctrl.Result{}, client.IgnoreNotFound(err)
			}
			child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name + "-child"}}
			_, err := ownership.CreateOrUpdate(ctx, mgr.GetClient(), owner, child, func() error { return nil })
			return ctrl.Result{}, err
		})
	})
}

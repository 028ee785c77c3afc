// Command controller-runtime is the weight baseline: controller-runtime
// alone, with controllerutil for a child.
package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steadyk8s/steady/bench/weight/base"
)

func main() {
	base.Main(func(mgr ctrl.Manager) crreconcile.Reconciler {
		return crreconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name + "-child"}}
			_, err := controllerutil.CreateOrUpdate(ctx, mgr.GetClient(), cm, func() error { return nil })
			return ctrl.Result{}, err
		})
	})
}

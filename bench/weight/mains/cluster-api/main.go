// Command cluster-api weighs what the benchmark's cluster-api variant
// imports (util/patch, util/conditions, util/finalizers) on the baseline.
package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/finalizers"
	"sigs.k8s.io/cluster-api/util/patch"

	"github.com/steadyk8s/steady/bench/weight/base"
)

func main() {
	base.Main(func(mgr ctrl.Manager) crreconcile.Reconciler {
		return crreconcile.Func(func(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
			cm := &corev1.ConfigMap{}
			if err := mgr.GetClient().Get(ctx, req.NamespacedName, cm); err != nil {
				return ctrl.Result{}, client.IgnoreNotFound(err)
			}
			if added, err := finalizers.EnsureFinalizer(ctx, mgr.GetClient(), cm, "example.com/cleanup"); err != nil || added {
				return ctrl.Result{}, err
			}
			h, err := patch.NewHelper(cm, mgr.GetClient())
			if err != nil {
				return ctrl.Result{}, err
			}
			defer func() { reterr = h.Patch(ctx, cm) }()
			var obj conditions.Setter
			if obj != nil {
				conditions.Set(obj, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Reconciled"})
			}
			return ctrl.Result{}, nil
		})
	})
}

// Command conditions weighs steady's conditions package on the baseline.
package main

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steadyk8s/steady/conditions"

	"github.com/steadyk8s/steady/bench/weight/base"
)

func main() {
	base.Main(func(mgr ctrl.Manager) crreconcile.Reconciler {
		return crreconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
			var obj conditions.Setter // a type with GetConditions and SetConditions
			if obj != nil {
				conditions.MarkTrue(obj, "Ready", "Reconciled", "")
			}
			return ctrl.Result{}, nil
		})
	})
}

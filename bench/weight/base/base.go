// Package base is the operator main every weight measurement shares: a
// controller-runtime manager with one controller, so that what a main adds
// on top is the package it measures.
package base

import (
	"os"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Main runs a manager with a ConfigMap controller that calls r, until a
// signal stops it.
func Main(r func(ctrl.Manager) crreconcile.Reconciler) {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		os.Exit(1)
	}
	if err := ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(r(mgr)); err != nil {
		os.Exit(1)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		os.Exit(1)
	}
}

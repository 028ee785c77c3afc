package multicluster_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/providers/clusters"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/multicluster"
	"github.com/steadyk8s/steady/reconcile"
)

// One steady reconciler for every cluster of a provider: the body gets the
// request's cluster and writes only there. (Nothing here talks to a
// cluster: the manager is not started.)
func ExampleFor() {
	provider := clusters.New() // or the kubeconfig, kind, cluster-api provider
	mgr, err := mcmanager.New(&rest.Config{Host: "https://127.0.0.1:6443"}, provider,
		mcmanager.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := multicluster.For[corev1.ConfigMap](mgr, func(ctx context.Context, c multicluster.Cluster, cm *corev1.ConfigMap) (ctrl.Result, error) {
		cm.Labels = map[string]string{"fleet.example.com/cluster": string(c.Name)}
		return ctrl.Result{}, nil // reconcile.For patches it, in cluster c
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = mcbuilder.ControllerManagedBy(mgr).Named("configmaps").For(&corev1.ConfigMap{}).Complete(r)
	fmt.Println(err)

	// For's options are checked once, not in every cluster's first reconcile.
	_, err = multicluster.For[corev1.ConfigMap](mgr, func(context.Context, multicluster.Cluster, *corev1.ConfigMap) (ctrl.Result, error) {
		return ctrl.Result{}, nil
	}, reconcile.WithReadySummary(conditions.SummaryOptions{ConditionTypes: []string{"Ready"}}))
	fmt.Println(err != nil)
	// Output:
	// <nil>
	// true
}

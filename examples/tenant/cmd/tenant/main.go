// Command tenant runs the tenant example operator against the cluster of the
// current kubeconfig: the Tenant controller, the registry Secret copier and
// the ClusterRoles Runnable in one manager.
package main

import (
	"flag"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/steadyk8s/steady"
	"github.com/steadyk8s/steady/examples/tenant"
)

func main() {
	var metricsAddr, probeAddr, secretNamespace, secretName string
	var leaderElect bool
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "address the metrics endpoint binds to (0 disables it)")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address the health probes bind to")
	flag.BoolVar(&leaderElect, "leader-elect", false, "enable leader election")
	flag.StringVar(&secretNamespace, "registry-secret-namespace", "tenant-system", "namespace of the Secret copied into every tenant namespace")
	flag.StringVar(&secretName, "registry-secret-name", tenant.DefaultRegistrySecret, "name of the Secret copied into every tenant namespace")
	opts := zap.Options{Development: true}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		log.Error(err, "building the scheme")
		os.Exit(1)
	}
	if err := tenant.AddToScheme(scheme); err != nil {
		log.Error(err, "building the scheme")
		os.Exit(1)
	}

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         leaderElect,
		LeaderElectionID:       "tenant.examples.steady.dev",
		// Cache only the registry Secrets, not every Secret of the cluster.
		Cache: cache.Options{ByObject: tenant.SecretCacheByObject(secretName)},
	})
	if err != nil {
		log.Error(err, "creating the manager")
		os.Exit(1)
	}

	c := steady.NewClient(mgr) // one per manager, shared by its reconcilers
	roles := &tenant.ClusterRoles{Client: c}
	if err := mgr.Add(roles); err != nil {
		log.Error(err, "adding the ClusterRoles runnable")
		os.Exit(1)
	}
	if err := (&tenant.Reconciler{
		Client:            c,
		ClusterRolesReady: roles.Ready(),
	}).SetupWithManager(mgr); err != nil {
		log.Error(err, "setting up the Tenant controller")
		os.Exit(1)
	}
	if err := (&tenant.RegistrySecretReconciler{
		Client: c,
		Source: types.NamespacedName{Namespace: secretNamespace, Name: secretName},
	}).SetupWithManager(mgr); err != nil {
		log.Error(err, "setting up the registry Secret controller")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "adding the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "adding the ready check")
		os.Exit(1)
	}

	log.Info("starting the manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "running the manager")
		os.Exit(1)
	}
}

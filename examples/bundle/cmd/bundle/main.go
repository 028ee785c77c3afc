// Command bundle runs the bundle example operator against the cluster of the
// current kubeconfig. Install its CRD first (kubectl apply -f
// examples/bundle/config/crd), which carries the label that makes Bundles
// ApplySet parents.
package main

import (
	"flag"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/steadyk8s/steady"
	"github.com/steadyk8s/steady/examples/bundle"
)

func main() {
	var metricsAddr, probeAddr string
	var leaderElect bool
	var waitCurrent, resync time.Duration
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "address the metrics endpoint binds to (0 disables it)")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address the health probes bind to")
	flag.BoolVar(&leaderElect, "leader-elect", false, "enable leader election")
	flag.DurationVar(&waitCurrent, "wait-current", 5*time.Second, "how long one reconcile waits for the members to become Current before it prunes")
	flag.DurationVar(&resync, "resync", 10*time.Minute, "how often converged Bundles are applied again, to repair drift")
	opts := zap.Options{Development: true}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, bundle.AddToScheme} {
		if err := add(scheme); err != nil {
			log.Error(err, "building the scheme")
			os.Exit(1)
		}
	}

	// The manager's client with its default options reads unstructured
	// objects from the API server, as applyset needs (applyset.New).
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         leaderElect,
		LeaderElectionID:       "bundle.examples.steady.dev",
	})
	if err != nil {
		log.Error(err, "creating the manager")
		os.Exit(1)
	}
	if err := (&bundle.Reconciler{
		Client:      steady.NewClient(mgr),
		WaitCurrent: waitCurrent,
		Resync:      resync,
	}).SetupWithManager(mgr); err != nil {
		log.Error(err, "setting up the Bundle controller")
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

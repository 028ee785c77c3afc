// Command bucket runs the Bucket controller against the cluster of the
// current kubeconfig (or in-cluster config) and any S3-compatible object
// storage:
//
//	kubectl apply -f config/crd
//	S3_ENDPOINT=s3.amazonaws.com S3_SECURE=true AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... go run ./cmd/bucket
//	go run ./cmd/bucket -fake-s3    # an in-memory S3 server in the process, to try it out
//	kubectl apply -f config/samples
package main

import (
	"flag"
	"os"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/steadyk8s/steady/examples/bucket"
)

func main() {
	var metricsAddr, probeAddr string
	var leaderElect, fake bool
	var s3 bucket.S3Config
	secure, _ := strconv.ParseBool(os.Getenv("S3_SECURE"))
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "address the metrics endpoint binds to; 0 disables it")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address the health probes bind to")
	flag.BoolVar(&leaderElect, "leader-elect", false, "elect a leader, for more than one replica")
	flag.StringVar(&s3.Endpoint, "s3-endpoint", os.Getenv("S3_ENDPOINT"), "S3 endpoint, host[:port] (env S3_ENDPOINT)")
	flag.BoolVar(&s3.Secure, "s3-secure", secure, "reach S3 over HTTPS (env S3_SECURE)")
	flag.StringVar(&s3.Region, "s3-region", os.Getenv("AWS_REGION"), "default region of new buckets (env AWS_REGION)")
	flag.BoolVar(&fake, "fake-s3", false, "run an in-memory S3 server in the process and use it")
	opts := zap.Options{Development: true}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("bucket")

	// Credentials from the environment only, never from flags (ps shows those).
	s3.AccessKeyID, s3.SecretAccessKey = os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if fake {
		f := bucket.NewFakeS3()
		defer f.Close()
		s3 = f.S3
		log.Info("in-memory S3 server", "endpoint", s3.URL())
	}
	if s3.Endpoint == "" {
		log.Info("no S3 endpoint: set -s3-endpoint or S3_ENDPOINT, or use -fake-s3")
		os.Exit(2)
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		log.Error(err, "scheme")
		os.Exit(1)
	}
	if err := bucket.AddToScheme(scheme); err != nil {
		log.Error(err, "scheme")
		os.Exit(1)
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         leaderElect,
		LeaderElectionID:       "bucket.s3.examples.steadyk8s.io",
	})
	if err != nil {
		log.Error(err, "manager")
		os.Exit(1)
	}
	if err := (&bucket.Reconciler{S3: s3}).SetupWithManager(mgr); err != nil {
		log.Error(err, "controller")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "ready check")
		os.Exit(1)
	}
	log.Info("starting", "s3", s3.URL())
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "manager stopped")
		os.Exit(1)
	}
}

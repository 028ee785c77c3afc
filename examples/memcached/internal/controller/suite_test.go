package controller

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	cachev1alpha1 "github.com/steadyk8s/steady/examples/memcached/api/v1alpha1"
	"github.com/steadyk8s/steady/testenv"
)

// These tests use Ginkgo (BDD-style Go testing framework). Refer to
// http://onsi.github.io/ginkgo/ to learn more about Ginkgo.

var (
	ctx       context.Context
	cancel    context.CancelFunc
	testEnv   *testenv.Environment
	cfg       *rest.Config
	k8sClient client.Client
	// requests counts what k8sClient asks of the API server.
	requests testenv.RequestCounter
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)

	RunSpecs(t, "Controller Suite")
}

var _ = BeforeSuite(startTestEnv)

// startTestEnv starts etcd, kube-apiserver and kube-controller-manager
// (the garbage collector, the deployment and replicaset controllers) from
// the assets testenv finds offline, with the CRDs of config/crd/bases, and
// a client that counts its requests.
func startTestEnv() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))

	ctx, cancel = context.WithCancel(context.TODO())

	Expect(cachev1alpha1.AddToScheme(scheme.Scheme)).To(Succeed())

	By("bootstrapping test environment")
	testEnv = testenv.New(
		testenv.WithScheme{Scheme: scheme.Scheme},
		testenv.WithCRDs{Paths: []string{"../../config/crd/bases"}},
		// The garbage collector, and the Deployment's own controllers,
		// which write its status.
		testenv.WithControllerManager{Controllers: []string{"deployment", "replicaset"}},
	)
	Expect(testEnv.Start()).To(Succeed())
	cfg = rest.CopyConfig(testEnv.Config)
	cfg.WrapTransport = requests.Wrap

	var err error
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
	Expect(k8sClient).NotTo(BeNil())
}

var _ = AfterSuite(func() {
	By("tearing down the test environment")
	if cancel != nil {
		cancel()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

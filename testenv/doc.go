// Package testenv runs a real Kubernetes control plane for a package's tests:
// etcd and kube-apiserver through controller-runtime's envtest, optionally
// beside a kube-controller-manager that runs the garbage collector and the
// namespace controller, so that ownerReference garbage collection and
// namespace deletion really happen, as they do on a cluster.
//
// Start it once in TestMain with [New] and [Environment.Run]; every test in
// the package shares it and takes a fresh namespace with
// [Environment.Namespace]:
//
//	var env = testenv.New(testenv.WithControllerManager{}, testenv.WithCRDs{Paths: []string{"config/crd"}})
//
//	func TestMain(m *testing.M) { os.Exit(env.Run(m)) }
//
//	func TestSomething(t *testing.T) {
//		ns := env.Namespace(t) // deleted again when the test ends
//		err := env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}})
//		...
//	}
//
// [Environment.StartManager] runs the code under test in a manager whose
// client reads from the informer cache, as in production; [WithTransport]
// wraps its requests, to count them ([RequestCounter]) or to make its cache
// lag ([DelayWatches]). [Environment.StopAPIServer], [Environment.KillEtcd]
// and their Start counterparts restart parts of the control plane,
// [Environment.InstallCRDs] adds CRDs to a running one, and [NewFleet] runs
// several.
//
// Plain envtest has no controllers: without [WithControllerManager],
// deleting an owner leaves its children and a deleted namespace stays
// Terminating. The binaries are found by [FindAssets]; where they are
// missing, Run still runs the pure tests and skips the others, unless
// STEADY_TESTENV_REQUIRE=1 or CI=true. No process is left behind, even when
// the test binary is killed.
//
// The guide, docs/testing.md in the repository, covers the binaries
// offline, a manager in the suite, counting requests, Ginkgo suites,
// fleets and the rules that make such tests worth having.
package testenv

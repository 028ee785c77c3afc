// Package testenv runs a real Kubernetes control plane for a package's tests:
// etcd and kube-apiserver through controller-runtime's envtest, optionally
// beside a kube-controller-manager that runs the garbage collector and the
// namespace controller, so that ownerReference garbage collection and
// namespace deletion really happen, as they do on a cluster.
//
// # One control plane per test package
//
// Start it once in TestMain with [New] and [Environment.Run]; every test in the
// package shares it and takes a fresh namespace with [Environment.Namespace]:
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
// Run stops the control plane when the tests end. The processes are watched
// by a small reaper, so none is left behind even when a test panics, times
// out or the test binary is killed, at any moment of Start included: the
// reaper kills every process whose command line names the control plane's
// temporary directory.
//
// # The code under test in a manager
//
// [Environment.StartManager] runs a controller-runtime manager on the
// environment, with its scheme and the indexes and controllers that
// [WithSetup] registers, and returns once its cache has synced; it stops
// when the test ends (mgr.GetCache().GetInformer(ctx, obj) warms the cache
// for another kind). Its client reads from the informer cache, as in
// production; [WithTransport] wraps its requests, to count them
// ([RequestCounter]) or to hold watch events back ([DelayWatches]) and test
// against a lagging cache.
//
// To stop a manager before the test ends, or to run several as replicas with
// leader election and kill the leader, make it with [Environment.NewManager]
// and start it yourself.
//
// # The API server restarted
//
// [Environment.StopAPIServer] and then [Environment.StartAPIServer] stop the
// kube-apiserver and start it again on the same etcd, address and
// certificates, as when a cluster's API server restarts: the environment's client and every running manager reconnect by
// themselves and find every object that was there; the controller manager is
// restarted once the API server is ready, as its garbage collector may not
// survive the restart (see StartAPIServer).
//
// [Environment.KillEtcd] kills etcd as a crash would, with the API server left
// running and every request that needs etcd failing or hanging;
// [Environment.StartEtcd] starts it again on the same data and returns once
// the API server is ready: every object is still there, and the clients, the
// managers and the controller manager carry on without a restart.
//
// # CRDs installed later
//
// [Environment.InstallCRDs] installs CRDs into a running environment and, with
// [WithControllerManager], returns only once the garbage collector knows their
// kinds (it restarts the controller manager, a few seconds); without that the
// collector would find them only on its next 30-second resync.
//
// # Machines without the binaries
//
// Where the binaries are not found in the default places, [Environment.Run]
// still runs the package's tests and skips those that need the control plane
// with a message naming `make envtest`, so pure tests stay useful; set
// STEADY_TESTENV_REQUIRE=1 (as `make test` does) or CI=true to make that a
// failure.
//
// # Assets
//
// The control plane needs the kube-apiserver and etcd binaries, and
// kube-controller-manager for [WithControllerManager]. [FindAssets] looks in
// KUBEBUILDER_ASSETS, then in the store that setup-envtest uses
// ($XDG_DATA_HOME/kubebuilder-envtest/k8s/<version>-<os>-<arch>, preferring
// 1.36.3, the version steady is tested against). Where they cannot be downloaded, `make envtest` in a
// steady checkout builds them from Go modules into that same store. When they
// are missing, Start fails with an [*AssetsError] that says so.
//
// # Several clusters
//
// [NewFleet] makes a [Fleet]: several control planes from the same assets,
// started concurrently, each an [Environment] of its own, for the tests of
// a controller that reconciles many clusters. [Environment.Kill] makes one
// unreachable at once while the others run.
//
// # Without the controller manager
//
// Plain envtest has no controllers at all: deleting an owner leaves its
// children in place and a deleted namespace stays Terminating forever. Tests
// that depend on either need [WithControllerManager]; the readiness check in
// Start proves both work before the first test runs.
package testenv

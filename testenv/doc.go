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
//	var env = testenv.New(testenv.WithControllerManager(), testenv.WithCRDPaths("config/crd"))
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
// out or the test binary is killed.
//
// # Assets
//
// The control plane needs the kube-apiserver and etcd binaries, and
// kube-controller-manager for [WithControllerManager]. [FindAssets] looks in
// KUBEBUILDER_ASSETS, then in the store that setup-envtest uses
// ($XDG_DATA_HOME/kubebuilder-envtest/k8s/<version>-<os>-<arch>, preferring
// [KubernetesVersion]). Where they cannot be downloaded, `make envtest` in a
// steady checkout builds them from Go modules into that same store. When they
// are missing, Start fails with an [*AssetsError] that says so.
//
// # Without the controller manager
//
// Plain envtest has no controllers at all: deleting an owner leaves its
// children in place and a deleted namespace stays Terminating forever. Tests
// that depend on either need [WithControllerManager]; the readiness check in
// Start proves both work before the first test runs.
package testenv

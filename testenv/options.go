package testenv

import (
	"io/fs"

	"k8s.io/apimachinery/pkg/runtime"
)

// Options configures an [Environment]. The zero value starts etcd and
// kube-apiserver with no CRDs, using the client-go scheme plus
// apiextensions/v1.
type Options struct {
	// CRDs are the CRD manifests to install, as each [WithCRDs] given
	// names them.
	CRDs []WithCRDs
	// Scheme is the scheme of the client; nil means a fresh scheme with
	// client-go's types and apiextensions/v1.
	Scheme *runtime.Scheme
	// ControllerManager runs kube-controller-manager with the
	// garbagecollector and namespace controllers beside the API server.
	ControllerManager bool
	// Controllers are kube-controller-manager's further controllers to
	// run beside those two (deployment, replicaset, job, statefulset),
	// when ControllerManager is set.
	Controllers []string
	// AssetsDir, when set, is the only directory searched for the
	// binaries: neither KUBEBUILDER_ASSETS nor the setup-envtest store is.
	AssetsDir string
}

// Option configures an [Environment].
type Option interface {
	ApplyToEnvironment(*Options)
}

// WithCRDs installs the CRDs of the manifests in Paths before the tests
// start: each path is a file or a directory of .yaml, .yml and .json files,
// each of which may hold several documents. Paths are read from FS when it
// is set (an embed.FS, say; no Paths then means its root) and from disk
// otherwise:
//
//	testenv.WithCRDs{Paths: []string{"config/crd/bases"}}
//	testenv.WithCRDs{FS: crds, Paths: []string{"config/crd"}}
//
// Given more than once, every one is installed.
type WithCRDs struct {
	Paths []string
	FS    fs.FS
}

// ApplyToEnvironment implements [Option].
func (c WithCRDs) ApplyToEnvironment(o *Options) { o.CRDs = append(o.CRDs, c) }

// WithScheme sets the scheme of the environment's client and managers.
// Register your own API types in it.
type WithScheme struct{ Scheme *runtime.Scheme }

// ApplyToEnvironment implements [Option].
func (s WithScheme) ApplyToEnvironment(o *Options) { o.Scheme = s.Scheme }

// WithControllerManager also runs kube-controller-manager with the
// garbagecollector and namespace controllers, so that children with owner
// references are collected when their owner goes and deleted namespaces
// disappear. The garbage collector knows the CRDs installed by the options
// from the start; install later ones with [Environment.InstallCRDs], which
// makes it know them before it returns.
//
// Controllers are further controllers of kube-controller-manager to run
// beside those two, by its names (--controllers):
// WithControllerManager{Controllers: []string{"deployment", "replicaset",
// "job", "statefulset"}} makes a workload child's own controller write its
// status as on a cluster, so that a test sees the status change under its
// controller. No scheduler or kubelet runs: Pods are created and stay
// Pending.
type WithControllerManager struct {
	Controllers []string
}

// ApplyToEnvironment implements [Option].
func (w WithControllerManager) ApplyToEnvironment(o *Options) {
	o.ControllerManager = true
	o.Controllers = append(o.Controllers, w.Controllers...)
}

// withAssetsDir looks for the control-plane binaries in this directory
// only, and fails with an [*AssetsError] naming it when they are not there.
type withAssetsDir string

// ApplyToEnvironment implements [Option].
func (d withAssetsDir) ApplyToEnvironment(o *Options) { o.AssetsDir = string(d) }

var (
	_ Option = WithCRDs{}
	_ Option = WithScheme{}
	_ Option = WithControllerManager{}
	_ Option = withAssetsDir("")
)

package testenv

import (
	"io/fs"

	"k8s.io/apimachinery/pkg/runtime"
)

// Options configures an [Environment]. The zero value starts etcd and
// kube-apiserver with no CRDs, using the client-go scheme plus
// apiextensions/v1.
type Options struct {
	// CRDPaths are files or directories of CRD manifests to install.
	CRDPaths []string
	// CRDFS and CRDDir name a directory of an fs.FS (an embed.FS, say)
	// whose .yaml, .yml and .json files hold CRD manifests to install.
	CRDFS  fs.FS
	CRDDir string
	// Scheme is the scheme of the client; nil means a fresh scheme with
	// client-go's types and apiextensions/v1.
	Scheme *runtime.Scheme
	// ControllerManager runs kube-controller-manager with the
	// garbagecollector and namespace controllers beside the API server.
	ControllerManager bool
	// Controllers are kube-controller-manager's further controllers to
	// run (deployment, replicaset, job, statefulset): with any, the
	// controller manager runs as with ControllerManager.
	Controllers []string
	// AssetsDir, when set, is the only directory searched for the
	// binaries: neither KUBEBUILDER_ASSETS nor the setup-envtest store is.
	AssetsDir string
}

// Option configures an [Environment].
type Option interface {
	ApplyToEnvironment(*Options)
}

// WithCRDPaths installs the CRDs found in these files or directories before
// the tests start.
type WithCRDPaths []string

// ApplyToEnvironment implements [Option].
func (p WithCRDPaths) ApplyToEnvironment(o *Options) { o.CRDPaths = append(o.CRDPaths, p...) }

// CRDFS is the option [WithCRDFS] returns.
type CRDFS struct {
	FS  fs.FS
	Dir string
}

// WithCRDFS installs the CRDs in directory dir of fsys (an embed.FS, say)
// before the tests start.
func WithCRDFS(fsys fs.FS, dir string) CRDFS { return CRDFS{FS: fsys, Dir: dir} }

// ApplyToEnvironment implements [Option].
func (c CRDFS) ApplyToEnvironment(o *Options) { o.CRDFS, o.CRDDir = c.FS, c.Dir }

// WithScheme sets the scheme of the environment's client and managers.
// Register your own API types in it.
type WithScheme struct{ Scheme *runtime.Scheme }

// ApplyToEnvironment implements [Option].
func (s WithScheme) ApplyToEnvironment(o *Options) { o.Scheme = s.Scheme }

// WithControllerManager also runs kube-controller-manager with only the
// garbagecollector and namespace controllers, so that children with owner
// references are collected when their owner goes and deleted namespaces
// disappear. The garbage collector knows the CRDs installed by the options
// from the start; install later ones with [Environment.InstallCRDs], which
// makes it know them before it returns.
type WithControllerManager struct{}

// ApplyToEnvironment implements [Option].
func (WithControllerManager) ApplyToEnvironment(o *Options) { o.ControllerManager = true }

// WithControllers also runs these controllers of kube-controller-manager,
// by its names (--controllers), beside the garbage collector and the
// namespace controller of [WithControllerManager], which it implies:
// WithControllers{"deployment", "replicaset", "job", "statefulset"} makes a
// workload child's own controller write its status as on a cluster, so that
// a test sees the status change under its controller. No scheduler or
// kubelet runs: Pods are created and stay Pending.
type WithControllers []string

// ApplyToEnvironment implements [Option].
func (w WithControllers) ApplyToEnvironment(o *Options) {
	o.ControllerManager = true
	o.Controllers = append(o.Controllers, w...)
}

// withAssetsDir looks for the control-plane binaries in this directory
// only, and fails with an [*AssetsError] naming it when they are not there.
type withAssetsDir string

// ApplyToEnvironment implements [Option].
func (d withAssetsDir) ApplyToEnvironment(o *Options) { o.AssetsDir = string(d) }

var (
	_ Option = WithControllers(nil)
	_ Option = WithCRDPaths(nil)
	_ Option = CRDFS{}
	_ Option = WithScheme{}
	_ Option = WithControllerManager{}
	_ Option = withAssetsDir("")
)

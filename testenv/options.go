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
	// AssetsDir, when set, is where the binaries are; KUBEBUILDER_ASSETS
	// still takes precedence, as it does for envtest.
	AssetsDir string
}

// Option changes [Options].
type Option func(*Options)

// WithCRDPaths installs the CRDs found in the given files or directories
// before the tests start.
func WithCRDPaths(paths ...string) Option {
	return func(o *Options) { o.CRDPaths = append(o.CRDPaths, paths...) }
}

// WithCRDFS installs the CRDs in directory dir of fsys (an embed.FS, say)
// before the tests start.
func WithCRDFS(fsys fs.FS, dir string) Option {
	return func(o *Options) { o.CRDFS, o.CRDDir = fsys, dir }
}

// WithScheme sets the scheme of the environment's client. Register your own
// API types in it.
func WithScheme(s *runtime.Scheme) Option {
	return func(o *Options) { o.Scheme = s }
}

// WithControllerManager also runs kube-controller-manager with only the
// garbagecollector and namespace controllers, so that children with owner
// references are collected when their owner goes and deleted namespaces
// disappear. CRDs installed by the options are known to it from the start;
// the garbage collector discovers CRDs installed later within 30 seconds.
func WithControllerManager() Option {
	return func(o *Options) { o.ControllerManager = true }
}

// WithAssetsDir looks for the control-plane binaries in dir instead of the
// setup-envtest store. KUBEBUILDER_ASSETS, when set, still wins.
func WithAssetsDir(dir string) Option {
	return func(o *Options) { o.AssetsDir = dir }
}

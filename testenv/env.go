package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Environment is a control plane for tests: etcd, kube-apiserver and,
// with [WithControllerManager], kube-controller-manager. Make one with
// [New]; its fields are set by [Environment.Start].
type Environment struct {
	// Config reaches the API server as a cluster admin.
	Config *rest.Config
	// Client is a direct (uncached) client with Scheme.
	Client client.Client
	// Scheme is the scheme of Client.
	Scheme *runtime.Scheme
	// Envtest is the underlying envtest environment, for what this package
	// does not wrap (AddUser, say).
	Envtest *envtest.Environment

	opts    Options
	mu      sync.Mutex
	started bool
	skip    string // why the tests that need the control plane are skipped
	assets  string // the directory of the binaries
	root    string // temporary directory for everything the control plane writes
	reaper  *reaper
	kcm     *controllerManager
	// apiServerDown is set between StopAPIServer and StartAPIServer.
	apiServerDown bool
	// etcdDown is set between KillEtcd and StartEtcd.
	etcdDown bool
}

// New returns an Environment configured by opts. Nothing starts until
// [Environment.Start] or [Environment.Run].
func New(opts ...Option) *Environment {
	e := &Environment{}
	for _, o := range opts {
		o.ApplyToEnvironment(&e.opts)
	}
	return e
}

// Run starts the control plane, runs the tests and stops the control
// plane again, returning the exit code for os.Exit. It is meant for
// TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(env.Run(m)) }
//
// When the control plane cannot start, Run prints why and returns 1, with
// one exception that keeps a package's pure tests useful on a machine
// without the binaries: when they were looked for in the default places (no
// KUBEBUILDER_ASSETS) and not found, and the run does not require them
// (STEADY_TESTENV_REQUIRE=1 or CI=true in the environment), Run prints the
// [*AssetsError] and runs the tests, and every test that needs the control
// plane ([Environment.Namespace], [Environment.Require],
// [Environment.StartManager], [Environment.InstallCRDs]) is skipped with
// that message. Run discards controller-runtime's logs unless
// STEADY_TESTENV_LOG is set (to "debug" for verbose ones).
func (e *Environment) Run(m *testing.M) (code int) {
	return runTests(m, e.Start, e.Stop, func(why string) { e.skip = why })
}

// runTests is Run of an environment or a fleet: start, run the tests (or
// skip those that need the control plane, with skip), stop.
func runTests(m *testing.M, start, stop func() error, skip func(why string)) (code int) {
	setTestLogger()
	if err := start(); err != nil {
		var ae *AssetsError
		if errors.As(err, &ae) && ae.implicit && !assetsRequired() {
			skip(ae.Error())
			fmt.Fprintf(os.Stderr, "%v\ntestenv: skipping the tests that need a control plane (set %s=1 to fail instead)\n", ae, requireEnv)
			return m.Run()
		}
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}()
	return m.Run()
}

// requireEnv names the environment variable that makes missing assets a
// failure of Environment.Run instead of a reason to skip: set it to 1 (or
// true) where the control plane must run, as `make test` does. CI=true has
// the same effect.
const requireEnv = "STEADY_TESTENV_REQUIRE"

func assetsRequired() bool {
	for _, v := range []string{os.Getenv(requireEnv), os.Getenv("CI")} {
		if v == "1" || strings.EqualFold(v, "true") {
			return true
		}
	}
	return false
}

// Require skips t when [Environment.Run] found no control-plane binaries
// and the run does not require them. Call it first in a test that uses
// Config, Client or Scheme without [Environment.Namespace].
func (e *Environment) Require(t testing.TB) {
	t.Helper()
	if e.skip != "" {
		t.Skip(e.skip)
	}
	e.mu.Lock()
	started := e.started
	e.mu.Unlock()
	if !started {
		t.Fatal("testenv: the control plane is not running: call env.Run(m) in TestMain, or Start")
	}
}

func setTestLogger() {
	switch os.Getenv("STEADY_TESTENV_LOG") {
	case "":
		logf.SetLogger(logr.Discard())
		klog.SetLogger(logr.Discard()) // client-go's: leader election, event broadcasters
	case "debug":
		logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true), zap.Level(zapcore.DebugLevel)))
	default:
		logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)))
	}
}

// Start starts the control plane and sets Config, Client and Scheme. On
// error nothing is left running.
func (e *Environment) Start() (err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started {
		return errors.New("testenv: already started")
	}
	var extra []string
	if e.opts.ControllerManager {
		extra = append(extra, controllerManagerBinary)
	}
	assets, err := findAssets(e.opts.AssetsDir, extra...)
	if err != nil {
		return err
	}
	e.assets = assets
	e.Scheme = e.opts.Scheme
	if e.Scheme == nil {
		e.Scheme = runtime.NewScheme()
		utilruntime.Must(clientgoscheme.AddToScheme(e.Scheme))
		utilruntime.Must(apiextensionsv1.AddToScheme(e.Scheme))
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	var crdPaths []string
	for _, c := range e.opts.CRDs {
		if c.FS == nil {
			crdPaths = append(crdPaths, c.Paths...)
			continue
		}
		read, err := readCRDs(c.FS, c.Paths)
		if err != nil {
			return err
		}
		crds = append(crds, read...)
	}

	if e.reaper, err = startReaper(); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.stop())
		}
	}()
	if e.root, err = os.MkdirTemp("", "steady-testenv-"); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	if err := e.reaper.removeOnDeath(e.root); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	for _, d := range []string{"etcd", "apiserver"} {
		if err := os.Mkdir(filepath.Join(e.root, d), 0o700); err != nil {
			return fmt.Errorf("testenv: %w", err)
		}
	}

	e.Envtest = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     crdPaths,
		CRDs:                  crds,
		ErrorIfCRDPathMissing: true,
		Scheme:                e.Scheme,
	}
	// envtest's default of 20 s for each process to start is short for a
	// control plane started beside other suites on a loaded machine (make
	// test runs its suites side by side, with -race: an API server took
	// longer there); envtest's variable still decides when it is set.
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
		e.Envtest.ControlPlaneStartTimeout = startTimeout
	}
	e.Envtest.ControlPlane.Etcd = &envtest.Etcd{DataDir: filepath.Join(e.root, "etcd")}
	e.Envtest.ControlPlane.APIServer = &envtest.APIServer{CertDir: filepath.Join(e.root, "apiserver")}
	e.Envtest.ControlPlane.APIServer.Path = filepath.Join(assets, apiServerBinary)
	// Without a bound, a stopping API server waits up to a minute for the
	// open watches of the clients (a manager's informers) to end.
	e.Envtest.ControlPlane.APIServer.Configure().Set("shutdown-watch-termination-grace-period", "2s")
	e.Envtest.ControlPlane.Etcd.Path = filepath.Join(assets, etcdBinary)
	e.Envtest.ControlPlane.KubectlPath = filepath.Join(assets, kubectlBinary)
	e.started = true

	// Watch etcd and the API server before envtest may fail mid-start, and
	// again once both run.
	cfg, startErr := e.Envtest.Start()
	if err := e.watchChildren(); err != nil {
		return errors.Join(startErr, err)
	}
	if startErr != nil {
		return fmt.Errorf("testenv: starting the control plane from %s: %w", assets, startErr)
	}
	e.Config = cfg
	if e.Client, err = client.New(cfg, client.Options{Scheme: e.Scheme}); err != nil {
		return fmt.Errorf("testenv: creating the client: %w", err)
	}
	if e.opts.ControllerManager {
		if e.kcm, err = startControllerManager(context.Background(), e); err != nil {
			return err
		}
	}
	return nil
}

func (e *Environment) watchChildren() error {
	pids, err := childProcesses(etcdBinary, apiServerBinary)
	if err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	for _, pid := range pids {
		if !namesDir(pid, e.root) {
			continue // another environment's (a fleet starts them concurrently)
		}
		if err := e.reaper.watch(pid); err != nil {
			return fmt.Errorf("testenv: %w", err)
		}
	}
	return nil
}

// Stop stops every process of the control plane and removes its files. It
// is safe to call more than once.
func (e *Environment) Stop() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stop()
}

// Kill makes the control plane unreachable at once, as a cluster that
// crashed or dropped off the network: it kills its processes (SIGKILL, no
// graceful shutdown, which waits for open watches) and then cleans up as
// [Environment.Stop] does. Use it to test a cluster of a [Fleet] that goes
// away while the others stay.
func (e *Environment) Kill() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started && e.root != "" {
		pids, err := childProcesses(etcdBinary, apiServerBinary, controllerManagerBinary)
		if err != nil {
			return fmt.Errorf("testenv: %w", err)
		}
		for _, pid := range pids {
			if namesDir(pid, e.root) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	return e.stop()
}

// killAndWait kills (SIGKILL) this environment's process of binary, if it
// runs, and returns once stop, the Stop of its envtest component, has seen it
// exit. e.mu is held.
func (e *Environment) killAndWait(binary string, stop func() error) error {
	pids, err := childProcesses(binary)
	if err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	for _, pid := range pids {
		if namesDir(pid, e.root) { // not another environment's
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	// Once the process has died, envtest's Stop only waits for it to be
	// reaped: its SIGTERM to the dead process's group changes nothing. When
	// the process was reaped between Stop's check and its signal, the signal
	// finds no process (ESRCH): it has exited all the same.
	if err := stop(); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("testenv: waiting for the killed %s to exit: %w", binary, err)
	}
	return nil
}

func (e *Environment) stop() error {
	var errs []error
	if e.kcm != nil {
		errs = append(errs, e.kcm.stop())
		e.kcm = nil
	}
	if e.started && e.etcdDown && !e.apiServerDown {
		// Without etcd, a kube-apiserver does not stop gracefully within
		// envtest's 20 seconds: its shutdown hooks wait for etcd.
		errs = append(errs, e.killAndWait(apiServerBinary, e.Envtest.ControlPlane.APIServer.Stop))
	}
	if e.started {
		if err := e.Envtest.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("testenv: stopping the control plane: %w", err))
		}
		e.started = false
		e.apiServerDown = false
		e.etcdDown = false
	}
	if e.root != "" {
		errs = append(errs, os.RemoveAll(e.root))
		e.root = ""
	}
	if e.reaper != nil {
		errs = append(errs, e.reaper.release())
		e.reaper = nil
	}
	return errors.Join(errs...)
}

// readCRDs decodes the files of fsys that paths name, and the .yaml, .yml
// and .json files of the directories they name (no paths: its root), each
// of which may hold several documents.
func readCRDs(fsys fs.FS, paths []string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	if len(paths) == 0 {
		paths = []string{"."}
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, p := range paths {
		if p == "" {
			p = "."
		}
		files := []string{p}
		if fi, err := fs.Stat(fsys, p); err != nil {
			return nil, fmt.Errorf("testenv: reading CRDs: %w", err)
		} else if fi.IsDir() {
			entries, err := fs.ReadDir(fsys, p)
			if err != nil {
				return nil, fmt.Errorf("testenv: reading CRDs: %w", err)
			}
			files = files[:0]
			for _, ent := range entries {
				switch path.Ext(ent.Name()) {
				case ".yaml", ".yml", ".json":
					files = append(files, path.Join(p, ent.Name()))
				}
			}
		}
		n := len(crds)
		for _, name := range files {
			read, err := decodeCRDs(fsys, name)
			if err != nil {
				return nil, err
			}
			crds = append(crds, read...)
		}
		if len(crds) == n {
			return nil, fmt.Errorf("testenv: no CRD manifests in %s", p)
		}
	}
	return crds, nil
}

// decodeCRDs decodes the CRDs in file name of fsys.
func decodeCRDs(fsys fs.FS, name string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("testenv: reading CRDs: %w", err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for i := 0; ; i++ {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := dec.Decode(crd); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("testenv: CRD file %s, document %d: %w", name, i, err)
		}
		if crd.Kind == "" && crd.Name == "" {
			continue // an empty document
		}
		if crd.Kind != "CustomResourceDefinition" {
			return nil, fmt.Errorf("testenv: CRD file %s, document %d: kind is %q, not CustomResourceDefinition", name, i, crd.Kind)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

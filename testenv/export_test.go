package testenv

// ChildProcesses lets the external tests see which processes the control
// plane runs.
var ChildProcesses = childProcesses

// The names of the binaries and of the variable that requires them, and the
// option that searches one directory only, for the external tests.
const (
	APIServerBinary         = apiServerBinary
	EtcdBinary              = etcdBinary
	ControllerManagerBinary = controllerManagerBinary
	RequireEnv              = requireEnv
)

type WithAssetsDir = withAssetsDir

// Start and Stop start and stop a fleet's members, as Fleet.Run does, for
// a test that runs a fleet of its own.
func (f *Fleet) Start() error { return f.start() }
func (f *Fleet) Stop() error  { return f.stop() }

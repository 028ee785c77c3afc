// Command envtest-assets builds the envtest control-plane binaries from Go
// modules, for machines where setup-envtest cannot download them.
//
// It builds kube-apiserver, kube-controller-manager and kubectl from
// k8s.io/kubernetes and etcd from go.etcd.io/etcd/server/v3, at the versions
// pinned in this module's go.mod, and writes them into the directory layout
// that setup-envtest uses:
//
//	$XDG_DATA_HOME/kubebuilder-envtest/k8s/1.36.3-linux-amd64/
//
// (~/.local/share when XDG_DATA_HOME is unset, ~/Library/Application Support/
// io.kubebuilder.envtest on macOS). When KUBEBUILDER_ASSETS is set, that
// directory is used instead. Only binaries that are missing are built, so
// assets that setup-envtest already installed are reused and a second run
// builds nothing. The directory is printed on standard output, so
//
//	export KUBEBUILDER_ASSETS=$(go run ./cmd/envtest-assets)
//
// works from this module's directory; progress goes to standard error.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// kubeVersion is the version of k8s.io/kubernetes required by this module's
// go.mod; etcdVersion the version of go.etcd.io/etcd/server/v3.
const (
	kubeVersion = "1.36.3"
	etcdVersion = "3.6.8"
)

// binary is one asset: its file name, the main package that builds it, the
// arguments that make it print its version, and the text that output must
// contain.
type binary struct {
	name        string
	pkg         string
	versionArgs []string
	version     string
}

var binaries = []binary{
	{"etcd", "go.etcd.io/etcd/server/v3", []string{"--version"}, "etcd Version: " + etcdVersion},
	{"kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver", []string{"--version"}, "Kubernetes v" + kubeVersion},
	{"kube-controller-manager", "k8s.io/kubernetes/cmd/kube-controller-manager", []string{"--version"}, "Kubernetes v" + kubeVersion},
	{"kubectl", "k8s.io/kubernetes/cmd/kubectl", []string{"version", "--client"}, "Client Version: v" + kubeVersion},
}

func main() {
	version := flag.String("version", kubeVersion, "Kubernetes version of the assets; only the version pinned in hack/go.mod can be built")
	check := flag.Bool("check", false, "only report whether the assets are present; build nothing")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: go run ./cmd/envtest-assets [-check] [-version %s]\n\n", kubeVersion)
		fmt.Fprintln(os.Stderr, "Builds the envtest assets from Go modules and prints their directory.")
		flag.PrintDefaults()
	}
	flag.Parse()
	dir, err := run(*version, *check)
	if err != nil {
		fmt.Fprintf(os.Stderr, "envtest-assets: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(dir)
}

func run(version string, check bool) (string, error) {
	if strings.TrimPrefix(version, "v") != kubeVersion {
		return "", fmt.Errorf("version %s cannot be built here: hack/go.mod pins k8s.io/kubernetes v%s; change it there (and the replace block) first", version, kubeVersion)
	}
	dir, err := assetsDir()
	if err != nil {
		return "", err
	}
	missing := missingBinaries(dir)
	if len(missing) == 0 {
		return dir, nil
	}
	if check {
		return "", fmt.Errorf("%s is missing from %s; run `make envtest` to build it", names(missing), dir)
	}
	modDir, err := moduleDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating the assets directory: %w", err)
	}
	unlock, err := lock(dir)
	if err != nil {
		return "", err
	}
	defer unlock()
	// A run stopped mid-build (killed) leaves its temporary directory.
	left, _ := filepath.Glob(filepath.Join(dir, ".build-*"))
	for _, d := range left {
		if err := os.RemoveAll(d); err != nil {
			return "", fmt.Errorf("removing %s, left by an interrupted build: %w", d, err)
		}
	}
	// Another run may have built them while we waited for the lock.
	if missing := missingBinaries(dir); len(missing) > 0 {
		if err := build(modDir, dir, missing); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// assetsDir is KUBEBUILDER_ASSETS when set, else setup-envtest's store
// directory for this version, OS and architecture.
func assetsDir() (string, error) {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return filepath.Abs(d)
	}
	var base string
	switch runtime.GOOS {
	case "darwin":
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("finding the setup-envtest store: %w", err)
		}
		base = filepath.Join(home, "Library", "Application Support", "io.kubebuilder.envtest")
	default:
		data := os.Getenv("XDG_DATA_HOME")
		if data == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("finding the setup-envtest store: neither XDG_DATA_HOME nor HOME is set: %w", err)
			}
			data = filepath.Join(home, ".local", "share")
		}
		base = filepath.Join(data, "kubebuilder-envtest")
	}
	return filepath.Join(base, "k8s", fmt.Sprintf("%s-%s-%s", kubeVersion, runtime.GOOS, runtime.GOARCH)), nil
}

func missingBinaries(dir string) []binary {
	var missing []binary
	for _, b := range binaries {
		fi, err := os.Stat(filepath.Join(dir, b.name))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	return missing
}

func names(bs []binary) string {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = b.name
	}
	return strings.Join(s, ", ")
}

// moduleDir finds this module's directory: the go.mod beside the working
// directory must be the hack module, whose go.mod pins the versions built.
func moduleDir() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("`go env GOMOD` failed: %w; is Go on PATH?", err)
	}
	gomod := strings.TrimSpace(string(out))
	data, err := os.ReadFile(gomod)
	if gomod == "" || gomod == os.DevNull || err != nil || !bytes.Contains(data, []byte("module github.com/steadyk8s/steady/hack\n")) {
		return "", errors.New("run this from steady's hack/ directory (`make envtest` does): its go.mod pins the Kubernetes and etcd modules to build")
	}
	return filepath.Dir(gomod), nil
}

// lock takes an exclusive lock on the assets directory, so that two test runs
// starting at once do not build the same binaries side by side.
func lock(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, ".steady-build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}

// build compiles the binaries in one go build, which shares their common
// packages and links them side by side, into a temporary directory beside
// their destination; it checks that each reports the expected version and
// renames it into place, so that an interrupted build never leaves a
// half-written asset behind.
func build(modDir, dir string, bs []binary) error {
	fmt.Fprintf(os.Stderr, "envtest-assets: building %s (a cold build of all assets takes about 8 minutes on 2 cores)\n", names(bs))
	start := time.Now()
	tmp, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return fmt.Errorf("building %s: %w", names(bs), err)
	}
	defer os.RemoveAll(tmp)
	args := []string{"build", "-trimpath", "-ldflags", ldflags(), "-o", tmp + string(filepath.Separator)}
	for _, b := range bs {
		args = append(args, b.pkg)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = modDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s failed (%w); the command was\n\tcd %s && CGO_ENABLED=0 go %s\nits output ends:\n%s",
			names(bs), err, modDir, strings.Join(quote(args), " "), tail(output.String(), 30))
	}
	for _, b := range bs {
		out := filepath.Join(tmp, binaryName(b.pkg))
		v, err := exec.Command(out, b.versionArgs...).CombinedOutput()
		if err != nil || !strings.Contains(string(v), b.version) {
			return fmt.Errorf("built %s, but `%s %s` printed %q, not %q (err: %v)",
				b.name, b.name, strings.Join(b.versionArgs, " "), strings.TrimSpace(string(v)), b.version, err)
		}
		if err := os.Rename(out, filepath.Join(dir, b.name)); err != nil {
			return fmt.Errorf("installing %s: %w", b.name, err)
		}
	}
	fmt.Fprintf(os.Stderr, "envtest-assets: built %s in %s\n", names(bs), time.Since(start).Round(time.Second))
	return nil
}

// binaryName is the file name go build gives the main package pkg: its last
// path element, or the one before a major-version suffix such as /v3.
func binaryName(pkg string) string {
	dir, base := path.Split(pkg)
	if len(base) > 1 && base[0] == 'v' && strings.Trim(base[1:], "0123456789") == "" && dir != "" {
		return path.Base(dir)
	}
	return base
}

// ldflags strips debug information and stamps the version, as Kubernetes'
// own build does (hack/lib/version.sh), so the binaries report v1.36.3
// instead of v0.0.0-master. etcd carries its version as a constant.
func ldflags() string {
	minor := strings.Split(kubeVersion, ".")[1]
	vars := map[string]string{
		"gitVersion":   "v" + kubeVersion,
		"gitMajor":     "1",
		"gitMinor":     minor,
		"gitTreeState": "archive",
		"buildDate":    time.Now().UTC().Format(time.RFC3339),
	}
	flags := []string{"-s", "-w"}
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		for _, k := range []string{"gitVersion", "gitMajor", "gitMinor", "gitTreeState", "buildDate"} {
			flags = append(flags, fmt.Sprintf("-X %s.%s=%s", pkg, k, vars[k]))
		}
	}
	return strings.Join(flags, " ")
}

func quote(args []string) []string {
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " \t") {
			a = "'" + a + "'"
		}
		q[i] = a
	}
	return q
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

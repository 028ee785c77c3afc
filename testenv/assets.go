package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// kubernetesVersion is the version of the control plane that steady is
// tested against and that `make envtest` builds; FindAssets prefers it
// in the setup-envtest store.
const kubernetesVersion = "1.36.3"

// Names of the asset binaries.
const (
	apiServerBinary         = "kube-apiserver"
	etcdBinary              = "etcd"
	controllerManagerBinary = "kube-controller-manager"
	kubectlBinary           = "kubectl"
)

// AssetsError says that the control-plane binaries were not found: which
// ones, and where testenv looked.
type AssetsError struct {
	// Missing are the binaries that no searched directory held.
	Missing []string
	// Searched are the directories looked in, in order.
	Searched []string

	implicit bool // only the default places were searched
}

// Error implements error.
func (e *AssetsError) Error() string {
	return fmt.Sprintf("testenv: envtest assets not found: %s missing (searched %s); "+
		"run `make envtest` in a steady checkout to build them from Go modules, "+
		"or set KUBEBUILDER_ASSETS to a directory that holds them",
		strings.Join(e.Missing, ", "), strings.Join(e.Searched, ", "))
}

// FindAssets returns the directory that holds kube-apiserver, etcd and,
// when controllerManager is true, kube-controller-manager. It honours
// KUBEBUILDER_ASSETS when set; otherwise it searches the setup-envtest
// store, Kubernetes 1.36.3 (the version steady is tested against) first,
// then the newest other version for this OS and architecture. Consumers of
// plain envtest can set KUBEBUILDER_ASSETS to the result.
func FindAssets(controllerManager bool) (string, error) {
	if controllerManager {
		return findAssets("", controllerManagerBinary)
	}
	return findAssets("")
}

func findAssets(only string, extra ...string) (string, error) {
	want := append([]string{apiServerBinary, etcdBinary}, extra...)
	if only != "" {
		if missing := missingIn(only, want); len(missing) > 0 {
			return "", &AssetsError{Missing: missing, Searched: []string{only + " (the only directory searched)"}}
		}
		return only, nil
	}
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		if missing := missingIn(d, want); len(missing) > 0 {
			return "", &AssetsError{Missing: missing, Searched: []string{"KUBEBUILDER_ASSETS=" + d}}
		}
		return d, nil
	}
	var candidates []string
	if store, err := envtest.SetupEnvtestDefaultBinaryAssetsDirectory(); err == nil {
		candidates = append(candidates, storeVersions(store)...)
	}
	var best []string
	for _, d := range candidates {
		missing := missingIn(d, want)
		if len(missing) == 0 {
			return d, nil
		}
		if best == nil || len(missing) < len(best) {
			best = missing
		}
	}
	if best == nil {
		best = want
	}
	return "", &AssetsError{Missing: best, Searched: candidates, implicit: true}
}

// storeVersions lists the store's directories for this OS and architecture,
// kubernetesVersion first and then newest first; the preferred one is listed
// even when it does not exist, so that errors name it.
func storeVersions(store string) []string {
	suffix := "-" + runtime.GOOS + "-" + runtime.GOARCH
	preferred := filepath.Join(store, kubernetesVersion+suffix)
	dirs := []string{preferred}
	entries, _ := os.ReadDir(store)
	var others []string
	for _, e := range entries {
		if e.IsDir() && strings.HasSuffix(e.Name(), suffix) && filepath.Join(store, e.Name()) != preferred {
			others = append(others, strings.TrimSuffix(e.Name(), suffix))
		}
	}
	sort.Slice(others, func(i, j int) bool { return versionLess(others[j], others[i]) })
	for _, v := range others {
		dirs = append(dirs, filepath.Join(store, v+suffix))
	}
	return dirs
}

// versionLess compares dotted numeric versions; non-numeric parts compare
// as text.
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		ai, aerr := strconv.Atoi(as[i])
		bi, berr := strconv.Atoi(bs[i])
		switch {
		case aerr == nil && berr == nil && ai != bi:
			return ai < bi
		case (aerr != nil || berr != nil) && as[i] != bs[i]:
			return as[i] < bs[i]
		}
	}
	return len(as) < len(bs)
}

func missingIn(dir string, names []string) []string {
	var missing []string
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(dir, n))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			missing = append(missing, n)
		}
	}
	return missing
}

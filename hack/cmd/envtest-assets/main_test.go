package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestAssetsDir(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("the store is under Library on macOS")
	}
	data := t.TempDir()
	t.Setenv("KUBEBUILDER_ASSETS", "")
	t.Setenv("XDG_DATA_HOME", data)
	got, err := assetsDir()
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(data, "kubebuilder-envtest", "k8s", kubeVersion+"-"+runtime.GOOS+"-"+runtime.GOARCH)
	if got != want {
		t.Errorf("store dir = %s, want %s", got, want)
	}
	t.Setenv("KUBEBUILDER_ASSETS", "/opt/assets")
	if got, _ := assetsDir(); got != "/opt/assets" {
		t.Errorf("with KUBEBUILDER_ASSETS, dir = %s", got)
	}
}

func TestOnlyMissingBinariesAreBuilt(t *testing.T) {
	dir := t.TempDir()
	if got := names(missingBinaries(dir)); got != "etcd, kube-apiserver, kube-controller-manager, kubectl" {
		t.Errorf("missing in an empty dir = %s", got)
	}
	// What setup-envtest installs: everything but the controller manager.
	for _, n := range []string{"etcd", "kube-apiserver", "kubectl"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Not executable does not count.
	if err := os.WriteFile(filepath.Join(dir, "kube-controller-manager"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := names(missingBinaries(dir)); got != "kube-controller-manager" {
		t.Errorf("missing beside setup-envtest's assets = %s", got)
	}
}

func TestCheckReportsMissingWithoutBuilding(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KUBEBUILDER_ASSETS", dir)
	_, err := run(kubeVersion, true)
	if err == nil || !strings.Contains(err.Error(), "make envtest") {
		t.Fatalf("run -check = %v, want an error naming make envtest", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("-check wrote %d entries", len(entries))
	}
	if _, err := run("1.30.0", false); err == nil || !strings.Contains(err.Error(), "hack/go.mod pins") {
		t.Errorf("another version: %v", err)
	}
}

func TestLdflagsStampTheVersion(t *testing.T) {
	f := ldflags()
	for _, want := range []string{
		"-X k8s.io/component-base/version.gitVersion=v" + kubeVersion,
		"-X k8s.io/component-base/version.gitMinor=36",
		"-X k8s.io/client-go/pkg/version.gitVersion=v" + kubeVersion,
	} {
		if !strings.Contains(f, want) {
			t.Errorf("ldflags %q lack %q", f, want)
		}
	}
}

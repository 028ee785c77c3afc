// Package examples holds steady's example operators; this file checks that
// their generated files (deepcopy, CRDs, RBAC) are up to date.
package examples

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedFilesAreUpToDate runs `go generate ./...` (controller-gen, as
// `make generate` does) in a copy of this module and fails when that changes
// any file: run `make generate` and commit the result.
func TestGeneratedFilesAreUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs controller-gen")
	}
	src, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	lib, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	files := map[string][]byte{}
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if rel == "go.mod" {
			data = bytes.ReplaceAll(data, []byte("=> ../"), []byte("=> "+lib+"/"))
		}
		files[rel] = data
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "generate", "./...")
	cmd.Dir = dst
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go generate: %v\n%s", err, out)
	}
	var stale []string
	err = filepath.WalkDir(dst, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dst, path)
		if rel == "go.mod" || rel == "go.sum" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if old, ok := files[rel]; !ok || !bytes.Equal(old, data) {
			stale = append(stale, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel := range files {
		if _, err := os.Stat(filepath.Join(dst, rel)); os.IsNotExist(err) {
			stale = append(stale, rel+" (removed by generate)")
		}
	}
	if len(stale) > 0 {
		t.Fatalf("generated files are out of date (run make generate and commit): %s", strings.Join(stale, ", "))
	}
}

// Package weight measures what importing steady costs a binary: for small
// operator mains (mains/*: the same controller-runtime manager, each adding
// one package), the modules its packages come from and the size of the
// stripped binary.
package weight

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Baseline is the main with controller-runtime alone.
const Baseline = "controller-runtime"

// Mains are the measured mains, under mains/, baseline first.
var Mains = []string{Baseline, "reconcile", "conditions", "finalizer", "ownership", "steady", "cluster-api"}

// Row is the weight of one main.
type Row struct {
	// Main names the main (a directory under mains/).
	Main string
	// Modules are the modules its packages come from (the main module
	// and the standard library left out).
	Modules []string
	// Packages counts the packages it is built from, outside the standard
	// library and the main module.
	Packages int
	// Added are the modules it has and the baseline has not.
	Added []string
	// Bytes is the size of the binary built with -trimpath -ldflags='-s -w'.
	Bytes int64
}

// Measure weighs every main; dir is the bench module's directory.
func Measure(ctx context.Context, dir string) ([]Row, error) {
	tmp, err := os.MkdirTemp("", "steady-weight-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var rows []Row
	for _, m := range Mains {
		pkg := "./weight/mains/" + m
		out, err := goCmd(ctx, dir, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}{{end}}", pkg)
		if err != nil {
			return nil, err
		}
		mods := map[string]bool{}
		row := Row{Main: m}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(l)
			if len(f) != 2 || f[1] == "github.com/steadyk8s/steady/bench" {
				continue
			}
			row.Packages++
			mods[f[1]] = true
		}
		for mod := range mods {
			row.Modules = append(row.Modules, mod)
		}
		slices.Sort(row.Modules)
		bin := filepath.Join(tmp, m)
		if _, err := goCmd(ctx, dir, "build", "-trimpath", "-ldflags=-s -w", "-o", bin, pkg); err != nil {
			return nil, err
		}
		fi, err := os.Stat(bin)
		if err != nil {
			return nil, err
		}
		row.Bytes = fi.Size()
		rows = append(rows, row)
	}
	for i := range rows {
		for _, mod := range rows[i].Modules {
			if !slices.Contains(rows[0].Modules, mod) {
				rows[i].Added = append(rows[i].Added, mod)
			}
		}
	}
	return rows, nil
}

func goCmd(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, msg)
	}
	return string(out), nil
}

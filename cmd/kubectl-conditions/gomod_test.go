package main

import (
	"os"
	"strings"
	"testing"
)

// TestGoModHasNoReplace: `go install github.com/steadyk8s/steady/cmd/kubectl-conditions@latest`
// refuses a module whose go.mod has replace or exclude directives, so this
// module must build from published versions alone (its envtest tests live in
// the clustertest module, which may replace).
func TestGoModHasNoReplace(t *testing.T) {
	data, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && (f[0] == "replace" || f[0] == "exclude") {
			t.Errorf("go.mod:%d: %q breaks go install ...@latest", i+1, line)
		}
	}
}

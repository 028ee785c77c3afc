package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/steadyk8s/steady/testenv"
)

// requireAssets mirrors testenv's rule: missing assets fail the test where
// the control plane must run (make test sets STEADY_TESTENV_REQUIRE=1; CI).
func requireAssets() bool {
	for _, v := range []string{os.Getenv("STEADY_TESTENV_REQUIRE"), os.Getenv("CI")} {
		if v == "1" || strings.EqualFold(v, "true") {
			return true
		}
	}
	return false
}

// TestDemo runs the demo as `make demo` does and checks its output: every
// registered owner kind printed Ready, then everything deleted. So `make
// test` proves that the demo works.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	if _, err := testenv.FindAssets(true); err != nil {
		if requireAssets() {
			t.Fatal(err)
		}
		t.Skipf("%v (run make envtest)", err)
	}
	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := run(ctx, &out, false)
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	text := out.String()
	for _, ex := range registry() {
		for _, gvk := range ex.Owners {
			ready := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(gvk.Kind) + ` \S+  Ready=True `)
			if !ready.MatchString(text) {
				t.Errorf("%s: no %s printed Ready", ex.Name, gvk.Kind)
			}
		}
	}
	for _, member := range []string{"Namespace shop [applyset member]", "CustomResourceDefinition carts.shop.example.com [applyset member]", "Cart shop/demo [applyset member]"} {
		if !strings.Contains(text, member) {
			t.Errorf("the tree lacks %q", member)
		}
	}
	// kubectl-conditions: all healthy, then every owner listed Ready, then
	// the broken Bucket found.
	if !strings.Contains(text, "$ kubectl conditions -A\nNo unhealthy objects: ") {
		t.Errorf("kubectl conditions -A did not find everything healthy")
	}
	for _, ex := range registry() {
		for _, gvk := range ex.Owners {
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(gvk.Kind) + ` +\S+ +Ready +True +`).MatchString(text) {
				t.Errorf("kubectl conditions --all lists no %s Ready", gvk.Kind)
			}
		}
	}
	for _, row := range []string{`Bucket +default/broken +Ready +False +InvalidBucketName +`, `Bucket +default/broken +Stalled +True +InvalidBucketName +`} {
		if !regexp.MustCompile(`(?m)^` + row).MatchString(text) {
			t.Errorf("kubectl conditions lacks the row %s", row)
		}
	}
	if got := strings.Count(text, "(exit status 0)") + 10*strings.Count(text, "(exit status 1)"); got != 12 {
		t.Errorf("kubectl conditions exit statuses: want 0, 0 then 1")
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "Everything is gone: ") {
		t.Errorf("the demo ends with %q, want everything gone", last)
	}
	for _, gone := range []string{"Bundle default/shop", "Bucket default/broken", "Namespace shop", "CustomResourceDefinition carts.shop.example.com"} {
		if !regexp.MustCompile(`gone after \S+\s+` + regexp.QuoteMeta(gone) + `\n`).MatchString(text) {
			t.Errorf("%s not reported gone", gone)
		}
	}
}

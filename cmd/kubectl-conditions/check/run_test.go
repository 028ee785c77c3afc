package check

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestRunUsageErrors: a command line that cannot run exits 2 with the
// error on stderr, before it reaches for a cluster.
func TestRunUsageErrors(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent/kubeconfig")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"-o", "xml"}, `unknown output format "xml"`},
		{[]string{"-l", "a in (b"}, `invalid selector "a in (b"`},
		{[]string{"deployments"}, "name resource types with --kind"},
		{[]string{"--kind", "deployments,,pods"}, "--kind has an empty entry"},
		{[]string{"--watch", "--interval", "0s"}, "--interval must be positive"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Run(context.Background(), c.args, &stdout, &stderr); code != ExitError {
			t.Errorf("%q: exit %d, want %d", c.args, code, ExitError)
		}
		if !strings.Contains(stderr.String(), c.want) || stdout.Len() > 0 {
			t.Errorf("%q: stderr %q (stdout %q), want %q", c.args, stderr.String(), stdout.String(), c.want)
		}
	}
}

// TestRunNoKubeconfig: a kubeconfig that does not exist is an error (2),
// like kubectl's.
func TestRunNoKubeconfig(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"--kubeconfig", "/nonexistent/kubeconfig"}, &stdout, &stderr)
	if code != ExitError || !strings.Contains(stderr.String(), "/nonexistent/kubeconfig") {
		t.Errorf("exit %d, stderr %q; want 2 naming the file", code, stderr.String())
	}
}

func TestRunHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), []string{"--help"}, &stdout, &stderr); code != ExitHealthy {
		t.Errorf("exit %d, want 0", code)
	}
	for _, want := range []string{"Usage:", "--kind", "--all-namespaces", "--kubeconfig", "--context", "--namespace", "--watch", "Exit status"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, stdout.String())
		}
	}
}

func TestPrintReportTable(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	hourAgo := now.Add(-time.Hour)
	r := &Report{
		Objects: []Object{
			{Kind: "Deployment", Resource: "deployments.apps", Namespace: "shop", Name: "web", Findings: []Finding{
				{Condition: KstatusCondition, Status: "InProgress", Reason: "LessReplicas", Message: "Replicas: 0/1", Since: &hourAgo, Rule: RuleNotCurrent}}},
			{Kind: "Machine", Resource: "machines.a.example.com", Name: "m1", Findings: []Finding{
				{Condition: "Ready", Status: "False", Message: "two\n\tlines", Rule: RuleNotTrue}}},
			{Kind: "Machine", Resource: "machines.b.example.com", Name: "m2", Findings: []Finding{
				{Condition: "Ready", Status: "Unknown", Reason: "R1", Rule: RuleNotTrue},
				{Condition: "Stalled", Status: "True", Reason: "R2", Rule: RuleProblemTrue}}},
		},
		Unhealthy: 3, Healthy: 7, ResourceTypes: 12,
	}
	var out bytes.Buffer
	if err := printReport(&out, r, "", false, now); err != nil {
		t.Fatal(err)
	}
	want := `KIND                    NAMESPACE/NAME   CONDITION   STATUS       REASON         AGE   MESSAGE
Deployment              shop/web         kstatus     InProgress   LessReplicas   60m   Replicas: 0/1
Machine.a.example.com   m1               Ready       False        -              -     two lines
Machine.b.example.com   m2               Ready       Unknown      R1             -     -
Machine.b.example.com   m2               Stalled     True         R2             -     -

3 unhealthy, 7 healthy objects in 12 resource types.
`
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	if err := printReport(&out, &Report{Objects: []Object{}, Healthy: 5, ResourceTypes: 1}, "", false, now); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "No unhealthy objects: 5 healthy in 1 resource type.\n"; got != want {
		t.Errorf("empty report: %q, want %q", got, want)
	}
}

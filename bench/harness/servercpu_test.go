package harness

import (
	"os/exec"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		line string
		want stat
		ok   bool
	}{
		{"4242 (kube-apiserver) S 4200 4242 4200 0 -1 4194560 9 0 0 0 150 25 0 0 20 0 12 0 1 2 3", stat{"kube-apiserver", 4200, 1750 * time.Millisecond}, true},
		// comm may hold spaces and parentheses: fields follow the last ')'.
		{"7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0", stat{"a (b) c", 1, 70 * time.Millisecond}, true},
		{"7 (etcd) S 1 7", stat{}, false},
		{"garbage", stat{}, false},
	} {
		got, ok := parseStat(tc.line)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

// TestDescendantsCPUCountsAChild: a child that burns CPU is found under its
// name, and its CPU grows while it runs; a name no descendant has is absent.
func TestDescendantsCPUCountsAChild(t *testing.T) {
	if descendantsCPU(nil) == nil {
		t.Skip("no /proc here")
	}
	// A shell that spins until it is killed.
	cmd := exec.Command("sh", "-c", `while :; do :; done`)
	if err := cmd.Start(); err != nil {
		t.Skip("no sh:", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var got time.Duration
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got = descendantsCPU([]string{"sh"})["sh"]; got >= 100*time.Millisecond {
			break
		}
	}
	if got < 100*time.Millisecond {
		t.Fatalf("the busy child's CPU read as %v", got)
	}
	if cpu, ok := descendantsCPU([]string{"no-such-process"})["no-such-process"]; ok {
		t.Errorf("a name no descendant has counted %v", cpu)
	}
}

package soak

import (
	"fmt"
	"os"
	"testing"

	"github.com/steadyk8s/steady/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	RunReplicaIfAsked() // the replicas are processes of this test binary
	var err error
	if env, err = NewEnvironment(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(env.Run(m))
}

// TestSoakSmoke runs the soak briefly (soak.Smoke: 12 s of churn and
// faults, a 5 s quiet window): the five example operators in two replicas
// with leader election under churn, faults, a lagging cache, dropped
// watches and another writer, the leader killed and the kube-apiserver
// restarted; it fails on any violation. make soak runs the long one
// (examples/cmd/soak).
func TestSoakSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and runs for about a minute")
	}
	env.Require(t)
	Run(t, env, Smoke)
}

// Command soak runs steady's reliability soak (examples/soak,
// docs/reliability.md) on a local control plane and prints what it did and
// found: operations, faults injected by kind, violations. It exits 1 on any
// violation. make soak runs it; SOAK_SMOKE=1 runs the short smoke instead,
// SOAK_OWNERS, SOAK_CHURN and SOAK_QUIET resize the run, SOAK_SEED picks
// another random sequence.
//
// The soak is written against *testing.T (its managers are testenv's,
// stopped as subtests end), so the command runs it through testing.Main.
package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/steadyk8s/steady/examples/soak"
)

func main() {
	soak.RunReplicaIfAsked() // the replicas are processes of this binary
	ctrl.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	cfg := soak.Long
	if os.Getenv("SOAK_SMOKE") == "1" {
		cfg = soak.Smoke
	}
	if v, err := strconv.Atoi(os.Getenv("SOAK_OWNERS")); err == nil {
		cfg.Owners = v
	}
	if v, err := strconv.ParseUint(os.Getenv("SOAK_SEED"), 10, 64); err == nil {
		cfg.Seed = v
	}
	for name, d := range map[string]*time.Duration{"SOAK_CHURN": &cfg.Churn, "SOAK_QUIET": &cfg.Quiet} {
		if v, err := time.ParseDuration(os.Getenv(name)); err == nil {
			*d = v
		}
	}
	fmt.Printf("soak: %d owners of each of 5 kinds, %d churners, %s of churn, %d replicas with leader election (lease %s, renew deadline %s, retry %s), %d leader kills (SIGKILL), %d kube-apiserver restarts, %d etcd kills (down %s), %.0f%% of requests failed, %.0f%% of watches dropped, watch events %s late, %s quiet window\n",
		cfg.Owners, cfg.Churners, cfg.Churn, cfg.Replicas, cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod, cfg.LeaderKills, cfg.APIServerRestarts, cfg.EtcdRestarts, cfg.EtcdDowntime,
		cfg.FaultRate*100, cfg.WatchDropRate*100, cfg.WatchDelay, cfg.Quiet)
	os.Args = append(os.Args[:1], "-test.v", "-test.timeout=30m")
	testing.Main(func(pat, str string) (bool, error) { return regexp.MatchString(pat, str) },
		[]testing.InternalTest{{Name: "Soak", F: func(t *testing.T) {
			env, err := soak.NewEnvironment()
			if err != nil {
				t.Fatal(err)
			}
			if err := env.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := env.Stop(); err != nil {
					t.Error(err)
				}
			})
			soak.Run(t, env, cfg)
		}}}, nil, nil)
}

// Command kubectl-conditions is a kubectl plugin that lists the objects whose
// conditions say they are unhealthy, across every resource type the cluster
// serves, and exits 1 when it finds any (0 when all are healthy, 2 on a usage
// or connection error), so that CI can gate on it:
//
//	go install github.com/steadyk8s/steady/cmd/kubectl-conditions@latest
//	kubectl conditions -A
//
// See package check for the rules and `kubectl conditions --help` for the
// flags.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/steadyk8s/steady/cmd/kubectl-conditions/check"
)

func main() {
	// client-go logs through klog (client-side throttling, say); the
	// command says what matters on stderr itself.
	klog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := check.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

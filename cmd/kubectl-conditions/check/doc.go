// Package check is kubectl-conditions: it finds the objects of a cluster
// whose conditions say they are unhealthy, across every resource type the
// API server serves.
//
// [Run] is the command (flags as kubectl's: --kubeconfig, --context, -n, -A,
// -l, plus --kind, --all, -o json|yaml, --watch, --progress); the program
// kubectl-conditions only calls it. [Scanner] is the scan on a rest.Config,
// for programs that want the [Report] itself; [Evaluate] is the health of one
// object.
//
// An object is unhealthy when
//
//   - its Ready or Available condition is False or Unknown (a Pod that has
//     Succeeded excepted);
//   - its Stalled or Degraded condition is True;
//   - status.observedGeneration, or a condition's observedGeneration, is
//     older than metadata.generation;
//   - kstatus (sigs.k8s.io/cli-utils/pkg/kstatus/status) says InProgress,
//     Failed or Terminating.
//
// A resource type this user may not list, or an aggregated API that is not
// available, is a warning in the report rather than an error.
package check

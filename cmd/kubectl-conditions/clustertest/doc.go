// Package clustertest holds kubectl-conditions' tests against a real API
// server (steady's testenv): it has no code of its own. It is a module of
// its own so that the plugin's module needs no replace directive, which
// `go install github.com/steadyk8s/steady/cmd/kubectl-conditions@latest`
// would refuse.
package clustertest

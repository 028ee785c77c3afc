// Package bench is steady's benchmark: one operator (a Team with a
// ConfigMap, a ServiceAccount and a RoleBinding) written three times, with
// steady, with careful hand-written controller-runtime code and with
// cluster-api's patch helper, run one after the other in one process on one
// control plane, and measured phase by phase (see docs/benchmarks.md and
// `make bench`).
package bench

import "embed"

// CRDs holds the Team CustomResourceDefinition, in config/crd.
//
//go:embed config/crd/*.yaml
var CRDs embed.FS

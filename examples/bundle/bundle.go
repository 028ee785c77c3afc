// Package bundle is steady's example of an operator that applies a set of
// manifests and prunes what leaves it: "apply is easy, prune is hard".
//
// A Bundle lists manifests, inline or from ConfigMaps in its namespace. The
// Bundle itself is the ApplySet parent (KEP-3659, as kubectl apply --prune
// uses it) of the objects they describe: its CRD carries the label
// applyset.kubernetes.io/is-parent-type=true, the Bundle gets the set's id
// label and annotations, and every member the part-of label. The reconciler
// hands the whole list to steady's applyset package, which applies
// CustomResourceDefinitions first (and waits until they are established),
// then Namespaces, then the rest, by server-side apply; waits until kstatus
// finds every member Current; and only then prunes the members that left the
// list. What happened to each object, the counts and kstatus' conditions
// (Ready, Reconciling, Stalled) are reported in the Bundle's status.
//
// A Bundle that is deleted deletes its members first: a finalizer applies the
// empty set (pruning everything, Namespaces and CRDs included) and keeps the
// Bundle until the pruned objects are really gone, so that "the Bundle went"
// means "everything it made went".
package bundle

import (
	"embed"

	"k8s.io/apimachinery/pkg/runtime"

	bundlev1alpha1 "github.com/steadyk8s/steady/examples/bundle/api/v1alpha1"
)

// CRDs holds the example's CustomResourceDefinitions, for tests and demos.
//
//go:embed config/crd/*.yaml
var CRDs embed.FS

// AddToScheme adds the bundle.examples.steady.dev/v1alpha1 types to a scheme.
func AddToScheme(s *runtime.Scheme) error { return bundlev1alpha1.AddToScheme(s) }

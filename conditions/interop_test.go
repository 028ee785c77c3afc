package conditions_test

import (
	capiconditions "sigs.k8s.io/cluster-api/util/conditions"

	"github.com/steadyk8s/steady/conditions"
)

// A conditions.Setter is a cluster-api Setter and Getter: objects marked
// with either package work with the other. The library does not import
// cluster-api; this test does, to keep the two interchangeable.
var (
	_ capiconditions.Setter = conditions.Setter(nil)
	_ capiconditions.Getter = conditions.Getter(nil)
)

package fleettest_test

import (
	"fmt"

	"github.com/steadyk8s/steady/multicluster/fleettest"
)

// Member i of a fleet is the cluster Name(i); Member reads the index back
// from a request's cluster name.
func ExampleName() {
	name := fleettest.Name(2)
	i, ok := fleettest.Member(name)
	fmt.Println(name, i, ok)
	_, ok = fleettest.Member("eu-1")
	fmt.Println(ok)
	// Output:
	// member-2 2 true
	// false
}

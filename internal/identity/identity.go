// Package identity keys maps by the identity of a pointer-shaped value (a
// cache, a client, a cluster's REST mapper) without keeping the value alive,
// and names the cluster a client talks to by its REST mapper: one per
// controller-runtime cluster.Cluster (a manager, or each cluster of a
// multicluster-runtime fleet), shared by its cached client and its reader.
package identity

import (
	"reflect"
	"weak"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Key is the identity of a value: it never equals the key of another value,
// even one allocated later at the same address (a weak pointer's identity is
// its object's, not its address), and it does not keep the value alive.
type Key = weak.Pointer[byte]

// Of returns v's identity, and false for values that have none: a nil or
// non-pointer value, or a pointer to a zero-sized type (all of which share
// one address).
func Of(v any) (Key, bool) {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Type().Elem().Size() == 0 {
		return Key{}, false
	}
	return weak.Make((*byte)(rv.UnsafePointer())), true
}

// Cluster is the identity of the cluster c talks to: its REST mapper's. Two
// clients of one manager share it; a client whose mapper has no identity
// gets the zero Key, which all such clients share (the knowledge of one
// process, as if there were one cluster); so does a nil or typed nil client.
func Cluster(c client.Client) Key {
	if c == nil {
		return Key{}
	}
	if v := reflect.ValueOf(c); v.Kind() == reflect.Pointer && v.IsNil() {
		return Key{} // a typed nil client: calling it would panic
	}
	k, _ := Of(c.RESTMapper())
	return k
}

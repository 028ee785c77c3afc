// Package apireader carries in a context the reader that reads from the API
// server for a client, not from its cache: [reconcile.For] puts its own
// (reconcile.WithAPIReader, the manager's API reader by default) in the
// context of the body it calls, so that the ownership calls in that body
// re-read a child through it after a conflict (a create that answers
// AlreadyExists while the cache does not show the child yet, after an API
// server restart, say) without being given one of their own.
//
// The reader is tied to the client it was given with: a call made with
// another client (another cluster's, a wrapped one) gets none, since the
// reader may not read what that client writes.
package apireader

import (
	"context"
	"reflect"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

type key struct{}

type entry struct {
	c client.Client
	r client.Reader
}

// With returns ctx carrying r as the API reader of c; ctx itself when r or c
// is nil.
func With(ctx context.Context, c client.Client, r client.Reader) context.Context {
	if c == nil || r == nil || isNil(r) {
		return ctx
	}
	return context.WithValue(ctx, key{}, entry{c: c, r: r})
}

// For returns the API reader ctx carries for c, or nil: when ctx carries
// none, or one given with another client.
func For(ctx context.Context, c client.Client) client.Reader {
	e, ok := ctx.Value(key{}).(entry)
	if !ok || !same(e.c, c) {
		return nil
	}
	return e.r
}

// same reports whether a and b are the same client: equal dynamic types
// and values, where the values can be compared at all (a struct holding a
// map cannot, and is then no match rather than a panic).
func same(a, b client.Client) bool {
	if a == nil || b == nil {
		return false
	}
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Type() != vb.Type() || !va.Comparable() {
		return false
	}
	return va.Equal(vb)
}

// isNil reports whether r is a typed nil pointer in an interface.
func isNil(r client.Reader) bool {
	v := reflect.ValueOf(r)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

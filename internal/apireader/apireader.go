// Package apireader carries in a context the reader that reads from the API
// server for a client, not from its cache: [reconcile.For] puts its own
// (reconcile.WithAPIReader; reconcile.NewController gives the manager's) in the
// context of the body it calls, so that the ownership calls in that body
// re-read a child through it after a conflict (a create that answers
// AlreadyExists while the cache does not show the child yet, after an API
// server restart, say) without being given one of their own.
//
// The reader is tied to the cluster of the client it was given with (its
// REST mapper's identity, [identity.Cluster]): a call made with a client of
// that cluster, wrapped or not, gets it; a call with another cluster's
// client (another manager's, another member of a fleet) gets none, since
// the reader does not read what that client writes.
package apireader

import (
	"context"
	"reflect"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/identity"
)

type key struct{}

// Tied is an API reader tied to a cluster, made once (see [Tie]) and put
// in a context per call: For ties its reader when it is built, not on
// every reconcile. The zero Tied carries nothing.
type Tied struct{ e *entry }

type entry struct {
	cluster identity.Key
	r       client.Reader
}

// Tie ties r to c's cluster; the zero Tied when r is nil or c's cluster
// has no identity (a nil client, a REST mapper that is not a pointer).
func Tie(c client.Client, r client.Reader) Tied {
	if c == nil || r == nil || isNil(r) {
		return Tied{}
	}
	k := identity.Cluster(c)
	if k == (identity.Key{}) {
		return Tied{}
	}
	return Tied{&entry{cluster: k, r: r}}
}

// Into returns ctx carrying t; ctx itself for the zero Tied.
func (t Tied) Into(ctx context.Context) context.Context {
	if t.e == nil {
		return ctx
	}
	return context.WithValue(ctx, key{}, t.e)
}

// With returns ctx carrying r as the API reader of c's cluster:
// Tie(c, r).Into(ctx).
func With(ctx context.Context, c client.Client, r client.Reader) context.Context {
	return Tie(c, r).Into(ctx)
}

// For returns the API reader ctx carries for c's cluster, or nil: when ctx
// carries none, or one of another cluster.
func For(ctx context.Context, c client.Client) client.Reader {
	e, ok := ctx.Value(key{}).(*entry)
	if !ok || c == nil || identity.Cluster(c) != e.cluster {
		return nil
	}
	return e.r
}

// isNil reports whether r is a typed nil pointer in an interface.
func isNil(r client.Reader) bool {
	v := reflect.ValueOf(r)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

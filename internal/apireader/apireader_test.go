package apireader

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// valueMapper is a REST mapper that is not a pointer: a client using it has
// no cluster identity.
type valueMapper struct{ meta.RESTMapper }

func TestFor(t *testing.T) {
	ctx := context.Background()
	m := meta.NewDefaultRESTMapper(nil)
	c := fake.NewClientBuilder().WithRESTMapper(m).Build()
	sameCluster := fake.NewClientBuilder().WithRESTMapper(m).Build()
	otherCluster := fake.NewClientBuilder().WithRESTMapper(meta.NewDefaultRESTMapper(nil)).Build()
	noIdentity := fake.NewClientBuilder().WithRESTMapper(valueMapper{m}).Build()
	r := fake.NewClientBuilder().Build()
	var typedNil *struct{ client.Reader }
	for _, tc := range []struct {
		name string
		ctx  context.Context
		c    client.Client
		want client.Reader
	}{
		{"the client it was given with", With(ctx, c, r), c, r},
		{"a wrapped client of that cluster", With(ctx, c, r), client.WithFieldOwner(c, "x"), r},
		{"another client of that cluster", With(ctx, c, r), sameCluster, r},
		{"another cluster's client", With(ctx, c, r), otherCluster, nil},
		{"no reader carried", ctx, c, nil},
		{"a nil reader", With(ctx, c, nil), c, nil},
		{"a typed nil reader", With(ctx, c, typedNil), c, nil},
		{"a nil client", With(ctx, nil, r), c, nil},
		{"asked with a nil client", With(ctx, c, r), nil, nil},
		{"a cluster without identity", With(ctx, noIdentity, r), noIdentity, nil},
		{"the innermost carrier", With(With(ctx, c, otherCluster), c, r), c, r},
	} {
		if got := For(tc.ctx, tc.c); got != tc.want {
			t.Errorf("%s: For = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// structClient is a client held by value, wrapping another.
type structClient struct {
	client.Client
	name string
}

type nilPtrClient struct{ client.Client }

// TestForEdgeCases (review): contexts derived from the carrier keep it; a
// client held by value is of the cluster of the client it wraps; a typed
// nil client has no cluster, and neither carries nor finds a reader (no
// panic calling its RESTMapper).
func TestForEdgeCases(t *testing.T) {
	ctx := context.Background()
	m := meta.NewDefaultRESTMapper(nil)
	c := fake.NewClientBuilder().WithRESTMapper(m).Build()
	other := fake.NewClientBuilder().WithRESTMapper(meta.NewDefaultRESTMapper(nil)).Build()
	r := fake.NewClientBuilder().Build()
	carried := With(ctx, c, r)
	cancelled, cancel := context.WithCancel(carried)
	cancel()
	var typedNil *nilPtrClient
	for _, tc := range []struct {
		name string
		ctx  context.Context
		c    client.Client
		want client.Reader
	}{
		{"a context derived with WithValue", context.WithValue(carried, struct{ k int }{1}, "v"), c, r},
		{"a cancelled derived context", cancelled, c, r},
		{"a struct value wrapping the client", carried, structClient{Client: c, name: "a"}, r},
		{"a struct value wrapping another cluster's client", carried, structClient{Client: other, name: "a"}, nil},
		{"carried by a struct value, asked by the client it wraps", With(ctx, structClient{Client: c}, r), c, r},
		{"a typed nil client, itself", With(ctx, typedNil, r), typedNil, nil},
		{"a typed nil client, asked by another", With(ctx, typedNil, r), c, nil},
		{"asked by a typed nil client", carried, typedNil, nil},
	} {
		if got := For(tc.ctx, tc.c); got != tc.want {
			t.Errorf("%s: For = %v, want %v", tc.name, got, tc.want)
		}
	}
}

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

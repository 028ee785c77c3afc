package apireader

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// mapClient is a client type whose values cannot be compared (it holds a
// map): For must not panic on it.
type mapClient struct {
	client.Client
	m map[string]string
}

func TestFor(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	other := fake.NewClientBuilder().Build()
	r := fake.NewClientBuilder().Build()
	var typedNil *struct{ client.Reader }
	uncomparable := mapClient{Client: c, m: map[string]string{}}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		c    client.Client
		want client.Reader
	}{
		{"the client it was given with", With(ctx, c, r), c, r},
		{"another client", With(ctx, c, r), other, nil},
		{"a wrapped client", With(ctx, c, r), client.WithFieldOwner(c, "x"), nil},
		{"no reader carried", ctx, c, nil},
		{"a nil reader", With(ctx, c, nil), c, nil},
		{"a typed nil reader", With(ctx, c, typedNil), c, nil},
		{"a nil client", With(ctx, nil, r), nil, nil},
		{"an uncomparable client", With(ctx, uncomparable, r), uncomparable, nil},
		{"the innermost carrier", With(With(ctx, c, other), c, r), c, r},
	} {
		if got := For(tc.ctx, tc.c); got != tc.want {
			t.Errorf("%s: For = %v, want %v", tc.name, got, tc.want)
		}
	}
}

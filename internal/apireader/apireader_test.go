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

// structClient is a comparable client type by value: whether two values
// compare depends on the client each holds.
type structClient struct {
	client.Client
	name string
}

type nilPtrClient struct{ client.Client }

// TestForEdgeCases (review): contexts derived from the carrier keep it; a
// struct-valued client matches an equal value only, and never panics when
// one value holds an uncomparable client and the other a comparable one
// (either way round); a typed nil client matches itself only.
func TestForEdgeCases(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	other := fake.NewClientBuilder().Build()
	r := fake.NewClientBuilder().Build()
	carried := With(ctx, c, r)
	cancelled, cancel := context.WithCancel(carried)
	cancel()
	byPtr := structClient{Client: c, name: "a"}
	byMap := structClient{Client: mapClient{Client: c, m: map[string]string{}}, name: "a"}
	var typedNil *nilPtrClient
	for _, tc := range []struct {
		name string
		ctx  context.Context
		c    client.Client
		want client.Reader
	}{
		{"a context derived with WithValue", context.WithValue(carried, struct{ k int }{1}, "v"), c, r},
		{"a cancelled derived context", cancelled, c, r},
		{"an equal struct value", With(ctx, byPtr, r), structClient{Client: c, name: "a"}, r},
		{"a struct value naming another client", With(ctx, byPtr, r), structClient{Client: other, name: "a"}, nil},
		{"a struct value holding an uncomparable client, asked by a comparable one", With(ctx, byMap, r), byPtr, nil},
		{"a comparable struct value, asked by one holding an uncomparable client", With(ctx, byPtr, r), byMap, nil},
		{"a typed nil client, itself", With(ctx, typedNil, r), typedNil, r},
		{"a typed nil client, asked by another", With(ctx, typedNil, r), c, nil},
	} {
		if got := For(tc.ctx, tc.c); got != tc.want {
			t.Errorf("%s: For = %v, want %v", tc.name, got, tc.want)
		}
	}
}

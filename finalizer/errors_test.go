package finalizer_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadyk8s/steady/finalizer"
)

// Faults injected on the finalizer writes: 409s converge, a 500 is an error
// naming the object and leaves the finalizers as they were.
func TestHandleFaults(t *testing.T) {
	env.Require(t)
	for _, tc := range []struct {
		name      string
		fault     func(n int) error
		wantErr   bool
		wantFinal []string
	}{
		{"409 on the first attempts converges", func(n int) error {
			if n <= 3 {
				return apierrors.NewConflict(schema.GroupResource{Resource: "widgets"}, "w", errors.New("injected"))
			}
			return nil
		}, false, []string{bucketFinalizer}},
		{"500", func(int) error { return apierrors.NewInternalError(errors.New("etcd is sad")) }, true, nil},
		{"timeout", func(int) error { return context.DeadlineExceeded }, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ww, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			c := interceptor.NewClient(ww, interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					calls++
					if err := tc.fault(calls); err != nil {
						return err
					}
					return c.Patch(ctx, obj, patch, opts...)
				},
			})
			h := finalizer.NewHandler(c)
			_ = h.Register(bucketFinalizer, finalizer.Func(func(context.Context, client.Object) error { return nil }))
			w := create(t, env.Client, env.Namespace(t))
			_, err = h.Handle(context.Background(), w)
			if tc.wantErr != (err != nil) {
				t.Fatalf("Handle = %v", err)
			}
			if err != nil && !strings.Contains(err.Error(), "Widget "+w.Namespace+"/w") {
				t.Errorf("error does not name the object: %v", err)
			}
			got, _ := stored(t, env.Client, w)
			if !slices.Equal(got.Finalizers, tc.wantFinal) {
				t.Errorf("stored finalizers %v, want %v", got.Finalizers, tc.wantFinal)
			}
			if err != nil && !slices.Equal(w.Finalizers, got.Finalizers) {
				t.Errorf("in memory %v, stored %v: the object claims what was not written", w.Finalizers, got.Finalizers)
			}
		})
	}
}

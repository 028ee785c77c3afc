package reconcile_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// Faults injected through an interceptor.
func TestFaults(t *testing.T) {
	env.Require(t)
	for _, tc := range []struct {
		name  string
		fault func(n int, patch client.Patch) error // n: 1 for the first PATCH
		check func(t *testing.T, err error, got *testapi.Widget)
	}{
		{"409 on the first attempts converges", func(n int, _ client.Patch) error {
			if n <= 3 {
				return apierrors.NewConflict(schema.GroupResource{Resource: "widgets"}, "w", errors.New("injected"))
			}
			return nil
		}, func(t *testing.T, err error, got *testapi.Widget) {
			if err != nil || got.Spec.Size != 5 || !conditions.IsTrue(got, "Ready") || !slices.Contains(got.Finalizers, "test.steady.dev/mine") {
				t.Errorf("err %v, object %+v", err, got)
			}
		}},
		{"500 on the metadata write says status was written", func(n int, _ client.Patch) error {
			if n == 2 {
				return apierrors.NewInternalError(errors.New("etcd is sad"))
			}
			return nil
		}, func(t *testing.T, err error, got *testapi.Widget) {
			var pe *reconcile.PatchError
			if !errors.As(err, &pe) || !apierrors.IsInternalError(err) || pe.Step != "metadata and spec" ||
				!slices.Equal(pe.Written, []string{"status"}) || pe.Object != "Widget "+got.Namespace+"/w" {
				t.Fatalf("err = %#v", err)
			}
			if !conditions.IsTrue(got, "Ready") || got.Spec.Size != 1 {
				t.Errorf("stored %+v: want status written and spec not", got)
			}
		}},
		{"500 on the status write: nothing written", func(n int, _ client.Patch) error {
			return apierrors.NewInternalError(errors.New("etcd is sad"))
		}, func(t *testing.T, err error, got *testapi.Widget) {
			var pe *reconcile.PatchError
			if !errors.As(err, &pe) || pe.Step != "status" || len(pe.Written) != 0 {
				t.Fatalf("err = %v", err)
			}
			if conditions.Get(got, "Ready") != nil || got.Spec.Size != 1 {
				t.Errorf("stored %+v", got)
			}
		}},
		{"timeout", func(n int, _ client.Patch) error { return context.DeadlineExceeded },
			func(t *testing.T, err error, got *testapi.Widget) {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("err = %v", err)
				}
			}},
		{"NotFound mid-reconcile is gone", func(n int, _ client.Patch) error {
			return apierrors.NewNotFound(schema.GroupResource{Resource: "widgets"}, "w")
		}, func(t *testing.T, err error, got *testapi.Widget) {
			// The status PATCH's NotFound may be a kind without a status
			// subresource: status is written with the object, in one
			// write with the rest, and NotFound again: gone.
			if err != nil {
				t.Errorf("err = %v", err)
			}
		}},
		{"webhook denial", func(n int, _ client.Patch) error {
			return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden,
				Reason: metav1.StatusReasonForbidden, Message: `admission webhook "deny.example.com" denied the request`}}
		}, func(t *testing.T, err error, got *testapi.Widget) {
			if !apierrors.IsForbidden(err) || conditions.Get(got, "Ready") != nil {
				t.Errorf("err = %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, _, _ := fixture(t)
			var calls atomic.Int32
			fault := func(patch client.Patch) error { return tc.fault(int(calls.Add(1)), patch) }
			ww, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
			if err != nil {
				t.Fatal(err)
			}
			c := interceptor.NewClient(ww, interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if err := fault(patch); err != nil {
						return err
					}
					return c.Patch(ctx, obj, patch, opts...)
				},
				SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
					if err := fault(patch); err != nil {
						return err
					}
					return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
				},
			})
			p, _ := reconcile.NewPatcher(c, w)
			conditions.MarkTrue(w, "Ready", "Ok", "")
			w.Spec.Size = 5
			w.Finalizers = append(w.Finalizers, "test.steady.dev/mine")
			err = p.Patch(context.Background(), w)
			tc.check(t, err, get(t, w))
		})
	}
}

func TestOptimisticLockReturnsTheConflict(t *testing.T) {
	env.Require(t)
	w, c, _ := fixture(t)
	p, _ := reconcile.NewPatcher(c, w)
	other := w.DeepCopy()
	other.Spec.Owner = "someone"
	if err := env.Client.Update(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	w.Spec.Size = 8
	err := p.Patch(context.Background(), w, reconcile.WithOptimisticLock{})
	if !apierrors.IsConflict(err) {
		t.Fatalf("Patch = %v, want a conflict", err)
	}
	if got := get(t, w); got.Spec.Size != 1 {
		t.Errorf("a conflicting patch still wrote: size %d", got.Spec.Size)
	}
}

func TestPatchOnExitJoinsErrors(t *testing.T) {
	env.Require(t)
	w, c, _ := fixture(t)
	p, _ := reconcile.NewPatcher(c, w)
	// The API server refuses the label value: the write fails. (A
	// condition status Maybe is refused before any write now.)
	w.Labels = map[string]string{"tier": "not valid!"}
	reconcileErr := errors.New("reconcile failed")
	err := reconcileErr
	p.PatchOnExit(context.Background(), w, nil, &err)
	if !errors.Is(err, reconcileErr) || !apierrors.IsInvalid(err) {
		t.Errorf("PatchOnExit error = %v, want the reconcile error joined with the API server's Invalid", err)
	}
}

// A write whose error did not come from the API server (a timeout, a
// dropped connection) may have been applied: the error must not say that
// nothing was written.
func TestPatchErrorOfATimeoutDoesNotClaimNothingWasWritten(t *testing.T) {
	env.Require(t)
	w, _, _ := fixture(t)
	ww, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	c := interceptor.NewClient(ww, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := c.SubResource(sub).Patch(ctx, obj, patch, opts...); err != nil {
				return err
			}
			return context.DeadlineExceeded // the answer never came
		},
	})
	p, _ := reconcile.NewPatcher(c, w)
	w.Status.Phase = "Landed"
	err = p.Patch(context.Background(), w)
	var pe *reconcile.PatchError
	if !errors.As(err, &pe) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if get(t, w).Status.Phase != "Landed" {
		t.Fatal("the write did not land; the test needs it to")
	}
	if !pe.Unsure || strings.Contains(err.Error(), "nothing was written)") {
		t.Errorf("err = %q (Unsure %v): claims nothing was written, but the write landed", err, pe.Unsure)
	}
}

package reconcile_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/object"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// TestPatchBadInput: every case changes spec.size to 5 and status.phase to
// Done, plus something bad. What the Patcher can tell is bad (a finalizer
// name, a condition's type, status or reason) is a *PatchError with Written
// empty wrapping a typed error that names the object and the field, and the
// API server shows nothing written. What only the API server refuses (a
// label value, a spec field of the wrong type) is refused at the metadata
// write, after the status write: Written says exactly ["status"], and the
// API server holds the status and not the rest. A reason fitted by
// conditions.Set is written with all the rest, nothing lost.
func TestPatchBadInput(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		// setup runs on the stored object before the Patcher's snapshot.
		setup func(t *testing.T, w *testapi.Widget)
		// change makes the bad change (on the typed object, or on its
		// unstructured form when changeU is set).
		change  func(w *testapi.Widget)
		changeU func(u *unstructured.Unstructured)
		// target is the typed error wrapped ("finalizer", "condition",
		// "api"); "" for success.
		target, field string
		written       []string
		// check looks at the stored object after a success.
		check func(t *testing.T, got *testapi.Widget)
	}{
		{name: "invalid finalizer name", change: func(w *testapi.Widget) {
			w.Finalizers = append(w.Finalizers, "test.steady.dev/ok", "Not A Name!")
		}, target: "finalizer", field: "metadata.finalizers"},
		{name: "condition with an invalid type", change: func(w *testapi.Widget) {
			w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{Type: "not a type!", Status: metav1.ConditionTrue, Reason: "R", LastTransitionTime: now})
		}, target: "condition", field: "status.conditions[1].type"},
		{name: "condition with status Maybe", change: func(w *testapi.Widget) {
			conditions.Set(w, metav1.Condition{Type: conditions.Ready, Status: "Maybe", Reason: "Thinking"})
		}, target: "condition", field: "status.conditions[0].status"},
		{name: "condition with an invalid reason set directly", change: func(w *testapi.Widget) {
			w.Status.Conditions[0].Reason = "not valid!"
		}, target: "condition", field: "status.conditions[0].reason"},
		{name: "unstructured condition with status Maybe", changeU: func(u *unstructured.Unstructured) {
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			conds = append(conds, map[string]any{"type": "Ready", "status": "Maybe", "reason": "R", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"})
			_ = unstructured.SetNestedSlice(u.Object, conds, "status", "conditions")
		}, target: "condition", field: "status.conditions[1].status"},
		{name: "unstructured invalid finalizer name", changeU: func(u *unstructured.Unstructured) {
			u.SetFinalizers([]string{"a/b/c"})
		}, target: "finalizer", field: "metadata.finalizers"},

		// Refused by the API server at the second write.
		{name: "label value refused (422) after the status write", change: func(w *testapi.Widget) {
			w.Labels = map[string]string{"tier": "not valid!"}
		}, target: "api", field: "metadata.labels", written: []string{"status"}},
		{name: "unstructured spec field of the wrong type refused (422) after the status write", changeU: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "big", "spec", "size")
		}, target: "api", field: "spec.size", written: []string{"status"}},

		// Written, nothing lost.
		{name: "invalid reason through MarkFalse is fitted", change: func(w *testapi.Widget) {
			conditions.MarkFalse(w, conditions.Ready, "Apply failed: 404 (not found)", "applying %s", "web")
		}, check: func(t *testing.T, got *testapi.Widget) {
			r := conditions.Get(got, conditions.Ready)
			if r == nil || r.Status != metav1.ConditionFalse || r.Reason != "Apply_failed:_404__not_found_" || r.Message != "applying web" ||
				!conditions.IsTrue(got, "Synced") {
				t.Errorf("stored conditions %+v", got.Status.Conditions)
			}
		}},
		{name: "another writer's invalid condition is not judged", setup: func(t *testing.T, w *testapi.Widget) {
			w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{Type: "their type!", Status: "Sometimes", Reason: "R", LastTransitionTime: now})
			if err := env.Client.Status().Update(context.Background(), w); err == nil || !apierrors.IsInvalid(err) {
				// The Widget CRD takes any type but only True, False or
				// Unknown as status.
				t.Fatalf("status Sometimes: %v", err)
			}
			w.Status.Conditions[len(w.Status.Conditions)-1].Status = metav1.ConditionTrue
			if err := env.Client.Status().Update(context.Background(), w); err != nil {
				t.Fatal(err)
			}
		}, change: func(w *testapi.Widget) {
			conditions.MarkTrue(w, conditions.Ready, "Done", "")
		}, check: func(t *testing.T, got *testapi.Widget) {
			if !conditions.IsTrue(got, "their type!") || !conditions.IsTrue(got, conditions.Ready) {
				t.Errorf("stored conditions %+v", got.Status.Conditions)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, c, n := fixture(t)
			if tc.setup != nil {
				tc.setup(t, w)
				w = get(t, w)
			}
			before := w.DeepCopy()
			var obj client.Object = w
			if tc.changeU != nil {
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(testapi.GroupVersion.WithKind("Widget"))
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), u); err != nil {
					t.Fatal(err)
				}
				obj = u
			}
			p, err := reconcile.NewPatcher(c, obj)
			if err != nil {
				t.Fatal(err)
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				_ = unstructured.SetNestedField(u.Object, int64(5), "spec", "size")
				_ = unstructured.SetNestedField(u.Object, "Done", "status", "phase")
				tc.changeU(u)
			} else {
				w.Spec.Size, w.Status.Phase = 5, "Done"
				tc.change(w)
			}
			n.Reset()
			err = p.Patch(ctx, obj)
			got := get(t, before)
			t.Logf("%v", err)

			if tc.target == "" {
				if err != nil || got.Spec.Size != 5 || got.Status.Phase != "Done" {
					t.Fatalf("Patch = %v; stored size %d, phase %q", err, got.Spec.Size, got.Status.Phase)
				}
				tc.check(t, got)
				return
			}
			var pe *reconcile.PatchError
			if !errors.As(err, &pe) || !slices.Equal(pe.Written, tc.written) || pe.Object != "Widget "+before.Namespace+"/w" {
				t.Fatalf("Patch = %v; want a *PatchError of Widget %s/w with Written %v", err, before.Namespace, tc.written)
			}
			var ne *object.FinalizerNameError
			var fe *conditions.FieldError
			switch tc.target {
			case "finalizer":
				if !errors.As(err, &ne) || !strings.Contains(err.Error(), tc.field) || ne.Object != pe.Object {
					t.Errorf("want an invalid finalizer name naming %s and %s", pe.Object, tc.field)
				}
			case "condition":
				if !errors.As(err, &fe) || fe.Field != tc.field || fe.Object != pe.Object {
					t.Errorf("want a *conditions.FieldError naming %s and %s", pe.Object, tc.field)
				}
			case "api":
				if !apierrors.IsInvalid(err) {
					t.Errorf("want the API server's 422")
				}
			}
			if !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), pe.Object) {
				t.Errorf("the message names neither the object nor the field %s", tc.field)
			}
			// Exactly what Written says is stored.
			switch {
			case len(tc.written) == 0:
				if got.ResourceVersion != before.ResourceVersion || n.Writes() != 0 {
					t.Errorf("written (requests %s): %+v", n, got)
				}
			default:
				if got.Status.Phase != "Done" || got.Spec.Size != before.Spec.Size || len(got.Labels) != 0 || len(got.Finalizers) != 0 {
					t.Errorf("stored: phase %q (want Done), size %d (want %d), labels %v", got.Status.Phase, got.Spec.Size, before.Spec.Size, got.Labels)
				}
			}
		})
	}
}

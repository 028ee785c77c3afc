package ownership_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
)

func TestCreateOrPatchWritesStatus(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "parent")
	for i, want := range []controllerutil.OperationResult{"created", "unchanged", "updatedStatusOnly", "unchanged"} {
		phase := "Pending"
		if i >= 2 {
			phase = "Running"
		}
		child := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child"}}
		n.Reset()
		op, err := ownership.CreateOrPatch(ctx, c, o, child, func() error {
			child.Spec.Size = 3
			child.Status.Phase = phase
			return nil
		})
		if err != nil || op != want {
			t.Fatalf("call %d: %s, %v; want %s", i, op, err, want)
		}
		var got testapi.Widget
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(child), &got); err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase != phase || got.Spec.Size != 3 {
			t.Errorf("call %d: stored spec.size %d, status.phase %q", i, got.Spec.Size, got.Status.Phase)
		}
		if op == controllerutil.OperationResultNone && n.Writes() != 0 {
			t.Errorf("call %d: unchanged but wrote: %s", i, n)
		}
	}
}

// TestAnotherWritersStatusSurvivesASpecChange: on a kind without a status
// subresource, the status another controller keeps survives a spec change
// of an unstructured child, through both calls, and the caller's object
// keeps it too.
func TestAnotherWritersStatusSurvivesASpecChange(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	for _, fn := range fns {
		t.Run(fn.name, func(t *testing.T) {
			size := int64(1)
			call := func() (*unstructured.Unstructured, controllerutil.OperationResult) {
				u := unstructuredChild(gizmoGVK, ns, "gizmo-"+strings.ToLower(fn.name))
				op, err := fn.fn(ctx, env.Client, o, u, func() error {
					return unstructured.SetNestedField(u.Object, size, "spec", "size")
				})
				if err != nil {
					t.Fatal(err)
				}
				return u, op
			}
			if _, op := call(); op != controllerutil.OperationResultCreated {
				t.Fatalf("first call: %s", op)
			}
			// Another controller keeps the status.
			other := unstructuredChild(gizmoGVK, ns, "gizmo-"+strings.ToLower(fn.name))
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(other), other); err != nil {
				t.Fatal(err)
			}
			_ = unstructured.SetNestedField(other.Object, "Running", "status", "phase")
			if err := env.Client.Update(ctx, other); err != nil {
				t.Fatal(err)
			}
			size = 2
			u, op := call()
			if op != controllerutil.OperationResultUpdated {
				t.Errorf("spec change: %s, want updated", op)
			}
			if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase != "Running" {
				t.Errorf("the caller's object lost the status: %v", u.Object["status"])
			}
			stored := unstructuredChild(gizmoGVK, ns, "gizmo-"+strings.ToLower(fn.name))
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(stored), stored); err != nil {
				t.Fatal(err)
			}
			phase, _, _ := unstructured.NestedString(stored.Object, "status", "phase")
			got, _, _ := unstructured.NestedInt64(stored.Object, "spec", "size")
			if phase != "Running" || got != 2 {
				t.Errorf("stored: status.phase %q, spec.size %d; want Running, 2", phase, got)
			}
		})
	}
}

// TestCreateOrPatchWritesAnUnstructuredChildsStatus, with and without a
// status subresource.
func TestCreateOrPatchWritesAnUnstructuredChildsStatus(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	for _, gvk := range []schema.GroupVersionKind{testapi.GroupVersion.WithKind("Widget"), gizmoGVK} {
		t.Run(gvk.Kind, func(t *testing.T) {
			for i, step := range []struct {
				phase string
				want  controllerutil.OperationResult
			}{{"Pending", "created"}, {"Pending", "unchanged"}, {"Running", "updatedStatusOnly"}, {"Running", "unchanged"}, {"", "updatedStatusOnly"}} {
				u := unstructuredChild(gvk, ns, "child")
				n.Reset()
				op, err := createOrPatch(ctx, c, o, u, func() error {
					if step.phase == "" {
						unstructured.RemoveNestedField(u.Object, "status", "phase")
						return nil
					}
					return unstructured.SetNestedField(u.Object, step.phase, "status", "phase")
				})
				if err != nil || op != step.want {
					t.Fatalf("call %d: %s, %v; want %s", i, op, err, step.want)
				}
				stored := unstructuredChild(gvk, ns, "child")
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(stored), stored); err != nil {
					t.Fatal(err)
				}
				if phase, _, _ := unstructured.NestedString(stored.Object, "status", "phase"); phase != step.phase {
					t.Errorf("call %d: stored status.phase %q, want %q", i, phase, step.phase)
				}
				if op == controllerutil.OperationResultNone && n.Writes() != 0 {
					t.Errorf("call %d: unchanged, but requests %s", i, n)
				}
			}
		})
	}
}

// TestCreateOrPatchKeepsTheStatusTheServerSetAtCreation: mutate sets no
// status, the API server sets a Pod's phase at creation; the status patch
// after the create must not remove it. And a status mutate does set lands
// on top of the server's.
func TestCreateOrPatchKeepsTheStatusTheServerSetAtCreation(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	if err := env.Client.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		message string // set by mutate; "" for none
	}{
		{"no status set", ""},
		{"a status field set", "scheduled by the test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: strings.ReplaceAll(tc.name, " ", "-")}}
			res, err := ownership.CreateOrPatch(ctx, remembering(), owner, pod, func() error {
				pod.Spec.Containers = []corev1.Container{{Name: "c", Image: "busybox"}}
				if tc.message != "" {
					pod.Status.Message = tc.message
				}
				return nil
			})
			if err != nil || res != controllerutil.OperationResultCreated {
				t.Fatalf("CreateOrPatch = %v, %v", res, err)
			}
			live := &corev1.Pod{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), live); err != nil {
				t.Fatal(err)
			}
			if live.Status.Phase != corev1.PodPending {
				t.Errorf("phase = %q: the status the API server set at creation was removed", live.Status.Phase)
			}
			if live.Status.Message != tc.message {
				t.Errorf("message = %q, want %q", live.Status.Message, tc.message)
			}
		})
	}
}

// TestAnotherWritersStatusSurvivesAStaleRead: CreateOrPatch changes spec
// and status of a child whose status another controller changed after our
// read. The other controller's status fields and conditions must survive
// (or the call is a conflict to requeue on); never silently erased.
func TestAnotherWritersStatusSurvivesAStaleRead(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	now := metav1.Now()
	theirs := metav1.Condition{Type: "Theirs", Status: metav1.ConditionTrue, Reason: "R", Message: "m", LastTransitionTime: now}
	ours := metav1.Condition{Type: "Ours", Status: metav1.ConditionFalse, Reason: "R", Message: "m", LastTransitionTime: now}
	oursNow := metav1.Condition{Type: "Ours", Status: metav1.ConditionTrue, Reason: "R", Message: "m", LastTransitionTime: now}
	for i, tc := range []struct {
		name       string
		specChange bool
		mutate     func(w *testapi.Widget)
	}{
		{"spec and scalar status change", true, func(w *testapi.Widget) { w.Status.Replicas = 3 }},
		{"spec and condition change", true, func(w *testapi.Widget) { meta.SetStatusCondition(&w.Status.Conditions, oursNow) }},
		{"condition change only", false, func(w *testapi.Widget) { meta.SetStatusCondition(&w.Status.Conditions, oursNow) }},
		{"our only condition removed", false, func(w *testapi.Widget) { meta.RemoveStatusCondition(&w.Status.Conditions, "Ours") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("w-%d", i)
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			if _, err := ownership.CreateOrPatch(ctx, remembering(), o, w, func() error {
				w.Spec.Size = 1
				meta.SetStatusCondition(&w.Status.Conditions, ours)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			c := staleAfterGet(t, &testapi.Widget{}, true, func(obj client.Object) {
				other := obj.(*testapi.Widget)
				other.Status.Phase = "Running"
				meta.SetStatusCondition(&other.Status.Conditions, theirs)
			})
			_, errs := requeue(t, func() (controllerutil.OperationResult, error) {
				w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				return ownership.CreateOrPatch(ctx, c, o, w, func() error {
					if tc.specChange {
						w.Spec.Size = 2
					}
					tc.mutate(w)
					return nil
				})
			})
			for _, err := range errs {
				t.Logf("requeued on: %v", err)
				if !apierrors.IsConflict(err) {
					t.Errorf("failed with %v, want a conflict to requeue on", err)
				}
			}
			var got testapi.Widget
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), &got); err != nil {
				t.Fatal(err)
			}
			if got.Status.Phase != "Running" || meta.FindStatusCondition(got.Status.Conditions, "Theirs") == nil {
				t.Errorf("the other writer's status is lost: %+v", got.Status)
			}
		})
	}
}

// TestSpecAndStatusChangeTogether: a change of spec and status in one call
// writes both and reports updatedStatus, on a typed child whose server
// answer to the spec patch does not carry the new status.
func TestSpecAndStatusChangeTogether(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	for i, step := range []struct {
		size  int
		phase string
		want  controllerutil.OperationResult
	}{{1, "", "created"}, {2, "Running", "updatedStatus"}, {2, "Running", "unchanged"}, {3, "", "updatedStatus"}, {3, "", "unchanged"}} {
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}
		n.Reset()
		op, err := ownership.CreateOrPatch(ctx, c, o, w, func() error {
			w.Spec.Size = step.size
			w.Status.Phase = step.phase
			return nil
		})
		if err != nil || op != step.want {
			t.Fatalf("call %d: %s, %v; want %s", i, op, err, step.want)
		}
		var got testapi.Widget
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), &got); err != nil {
			t.Fatal(err)
		}
		if got.Spec.Size != step.size || got.Status.Phase != step.phase || w.Status.Phase != step.phase {
			t.Errorf("call %d: stored size %d phase %q, caller's phase %q", i, got.Spec.Size, got.Status.Phase, w.Status.Phase)
		}
		t.Logf("call %d: %s", i, n)
	}
}

// TestStatusOfAKindWithoutASubresourceIsOneWrite: on a kind without a
// status subresource, a status change is one write (not a request to a
// status subresource that is not there first, but for the first status
// write of the kind, which finds that out), and a status and spec change
// no more than one dry run and two writes.
func TestStatusOfAKindWithoutASubresourceIsOneWrite(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	for i, step := range []struct {
		size   int64
		phase  string
		want   controllerutil.OperationResult
		writes int
	}{{1, "A", "created", 1}, {1, "B", "updatedStatusOnly", 2}, // at most once per kind
		{1, "B2", "updatedStatusOnly", 1}, {1, "C", "updatedStatusOnly", 1}, {2, "D", "updatedStatus", 2}, {2, "D", "unchanged", 0}} {
		u := unstructuredChild(gizmoGVK, ns, "g")
		n.Reset()
		op, err := ownership.CreateOrPatch(ctx, c, o, u, func() error {
			if err := unstructured.SetNestedField(u.Object, step.size, "spec", "size"); err != nil {
				return err
			}
			return unstructured.SetNestedField(u.Object, step.phase, "status", "phase")
		})
		if err != nil || op != step.want {
			t.Fatalf("call %d: %s, %v; want %s", i, op, err, step.want)
		}
		if n.Writes() > step.writes {
			t.Errorf("call %d (%s): requests %s, want at most %d writes", i, op, n, step.writes)
		}
	}
}

// TestConditionsSurviveALaggingCache: through a manager's cached client
// held 300ms back, CreateOrPatch changing our condition of a child right
// after another controller added its own keeps both (after conflicts to
// requeue on).
func TestConditionsSurviveALaggingCache(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startCached(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	now := metav1.Now()
	set := func(c client.Client, status metav1.ConditionStatus) (controllerutil.OperationResult, error) {
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child"}}
		return ownership.CreateOrPatch(ctx, c, o, w, func() error {
			meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: "Ours", Status: status, Reason: "R", Message: "m", LastTransitionTime: now})
			return nil
		})
	}
	if _, err := set(env.Client, metav1.ConditionFalse); err != nil {
		t.Fatal(err)
	}
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child"}}
	cachedSees(t, cc, w)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: "Theirs", Status: metav1.ConditionTrue, Reason: "R", Message: "m", LastTransitionTime: now})
	if err := env.Client.Status().Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	_, errs := requeue(t, func() (controllerutil.OperationResult, error) { return set(cc.Client, metav1.ConditionTrue) })
	for _, err := range errs {
		if !apierrors.IsConflict(err) {
			t.Errorf("failed with %v, want a conflict", err)
		}
	}
	var got testapi.Widget
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), &got); err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(got.Status.Conditions, "Ours") || meta.FindStatusCondition(got.Status.Conditions, "Theirs") == nil {
		t.Errorf("stored conditions %v: ours not set or theirs lost", got.Status.Conditions)
	}
	t.Logf("%d conflict(s) before the write landed", len(errs))
}

// TestRemovingTheWholeStatusRemovesWhatWasRead: an unstructured child's
// mutate that deletes the status removes the status fields it read, not
// those another writer set since a stale read (on a status subresource,
// where a status-only patch is locked on the resourceVersion read, the
// stale read is a conflict instead).
func TestRemovingTheWholeStatusRemovesWhatWasRead(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	for _, gvk := range []schema.GroupVersionKind{testapi.GroupVersion.WithKind("Widget"), gizmoGVK} {
		t.Run(gvk.Kind, func(t *testing.T) {
			// Created, then given its status by a second call: that write
			// teaches ownership whether the kind has a status subresource
			// (a create of a kind without one stores the status, and
			// teaches nothing), as a controller's later reconciles would.
			for _, replicas := range []any{nil, int64(3)} {
				u := unstructuredChild(gvk, ns, "s")
				if _, err := ownership.CreateOrPatch(ctx, remembering(), o, u, func() error {
					if replicas == nil {
						return nil
					}
					return unstructured.SetNestedField(u.Object, replicas, "status", "replicas")
				}); err != nil {
					t.Fatal(err)
				}
			}
			c := staleAfterGet(t, unstructuredChild(gvk, ns, "s"), gvk.Kind == "Widget", func(obj client.Object) {
				_ = unstructured.SetNestedField(obj.(*unstructured.Unstructured).Object, "Running", "status", "phase")
			})
			u := unstructuredChild(gvk, ns, "s")
			_, err := ownership.CreateOrPatch(ctx, c, o, u, func() error { delete(u.Object, "status"); return nil })
			if err != nil && !apierrors.IsConflict(err) {
				t.Fatal(err)
			}
			stored := unstructuredChild(gvk, ns, "s")
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(stored), stored); err != nil {
				t.Fatal(err)
			}
			// A status subresource ignores the UID: a status-only patch is
			// locked on the resourceVersion read, and this stale read is a
			// conflict with nothing written.
			phase, _, _ := unstructured.NestedString(stored.Object, "status", "phase")
			_, has, _ := unstructured.NestedInt64(stored.Object, "status", "replicas")
			if phase != "Running" || has == (err == nil) {
				t.Errorf("stored status %v after %v: want the other writer's phase kept, our replicas removed (or kept, with a conflict)", stored.Object["status"], err)
			}
			if gvk.Kind == "Gizmo" && err != nil {
				t.Errorf("on a kind without a status subresource (the UID checked on the object): %v", err)
			}
		})
	}
}

// TestCreateOrUpdateDoesNotPayForStatusItCannotWrite: CreateOrUpdate with a
// mutate that also sets status, on a kind with a status subresource (whose
// update ignores status), costs no request once it knows the kind has one,
// even with a status that changes every call: status is not compared
// there. The first update of the kind teaches it (at most one per REST
// mapper, the cluster as ownership knows it, which the server finds
// nothing in). On a kind without one, a status change is still written.
// Through a manager's cached client held 300ms back and a counting direct
// client.
func TestCreateOrUpdateDoesNotPayForStatusItCannotWrite(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	cc := startCached(t)
	direct, dn := counting(t)
	learning := 0
	for _, tc := range []struct {
		name string
		c    client.Client
		n    *testapi.Counter
	}{{"cached", cc.Client, cc.Counter}, {"direct", direct, dn}} {
		t.Run(tc.name, func(t *testing.T) {
			name := "w-" + tc.name
			for i := 0; i < 6; i++ {
				w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				tc.n.Reset()
				op, err := ownership.CreateOrUpdate(ctx, tc.c, o, w, func() error {
					w.Spec.Size = 2
					w.Status.Phase = fmt.Sprintf("phase-%d", i) // never written by CreateOrUpdate
					return nil
				})
				want := controllerutil.OperationResultNone
				if i == 0 {
					want = controllerutil.OperationResultCreated
				}
				if err != nil || op != want {
					t.Fatalf("call %d: %s, %v; want %s", i, op, err, want)
				}
				if i > 0 {
					learning += tc.n.Writes() + tc.n.Get("DRYRUN-PUT")
				}
				if i > 0 && w.Status.Phase != "" {
					t.Errorf("call %d: status phase %q stored; the update wrote status", i, w.Status.Phase)
				}
				t.Logf("call %d: %s, requests %s", i, op, tc.n)
				if i == 0 && tc.name == "cached" {
					cachedSees(t, cc, w)
				}
			}
		})
	}
	// What is learned of a kind is kept per cluster, by REST mapper: the
	// manager's client and the counting client have one each here.
	if learning > 2 {
		t.Errorf("%d requests beyond the GETs in 10 calls whose only difference is a status the update cannot write; want at most the one per client's REST mapper that learns the kind", learning)
	}
	t.Run("a kind without a status subresource", func(t *testing.T) {
		for i, phase := range []string{"A", "B"} {
			u := unstructuredChild(gizmoGVK, ns, "g")
			op, err := ownership.CreateOrUpdate(ctx, direct, o, u, func() error {
				return unstructured.SetNestedField(u.Object, phase, "status", "phase")
			})
			if want := []controllerutil.OperationResult{"created", "updated"}[i]; err != nil || op != want {
				t.Fatalf("phase %s: %s, %v; want %s", phase, op, err, want)
			}
		}
		stored := unstructuredChild(gizmoGVK, ns, "g")
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(stored), stored); err != nil {
			t.Fatal(err)
		}
		if phase, _, _ := unstructured.NestedString(stored.Object, "status", "phase"); phase != "B" {
			t.Errorf("stored status.phase %q, want B", phase)
		}
	})
}

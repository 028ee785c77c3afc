package ownership_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
)

// staleAfterGet is a client whose first Get is followed, before the caller
// goes on, by another writer's change: the read the caller holds is stale,
// as a lagging cache's read is, deterministically. The other writer reads
// the child into a copy of obj, changes it and updates it (its status when
// status is true).
func staleAfterGet(t *testing.T, obj client.Object, status bool, change func(client.Object)) client.Client {
	t.Helper()
	var once sync.Once
	return interceptor.NewClient(watchClient(t), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, into client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, into, opts...); err != nil {
				return err
			}
			once.Do(func() {
				other := obj.DeepCopyObject().(client.Object)
				if err := env.Client.Get(ctx, key, other); err != nil {
					t.Error(err)
					return
				}
				change(other)
				update := env.Client.Update
				if status {
					update = func(ctx context.Context, o client.Object, opts ...client.UpdateOption) error {
						return env.Client.Status().Update(ctx, o)
					}
				}
				if err := update(ctx, other); err != nil {
					t.Error(err)
				}
			})
			return nil
		},
	})
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
			if _, err := ownership.CreateOrPatch(ctx, env.Client, o, w, func() error {
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

// TestReferencesTheGarbageCollectorWouldMisreadAreRefused: as
// controllerutil's do, SetControllerReference and SetOwnerReference refuse
// an owner in another namespace (the garbage collector looks the owner up
// in the child's namespace, finds nothing and deletes the child), a
// namespaced owner of a child without a namespace, and an owner without a
// UID, and leave the child as it was.
func TestReferencesTheGarbageCollectorWouldMisreadAreRefused(t *testing.T) {
	env.Require(t)
	o := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "o", UID: "1"}}
	noUID := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "o"}}
	for _, tc := range []struct {
		name         string
		owner, child client.Object
	}{
		{"owner in another namespace", o, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "c"}}},
		{"child without a namespace", o, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}},
		{"owner without a UID", noUID, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "c"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, set := range map[string]func() (bool, error){
				"SetControllerReference": func() (bool, error) { return ownership.SetControllerReference(tc.owner, tc.child, env.Scheme) },
				"SetOwnerReference":      func() (bool, error) { return ownership.SetOwnerReference(tc.owner, tc.child, env.Scheme) },
			} {
				changed, err := set()
				var ioe *ownership.InvalidOwnerError
				if !errors.As(err, &ioe) || changed || len(tc.child.GetOwnerReferences()) != 0 {
					t.Errorf("%s: %v, %v, references %v; want an *InvalidOwnerError and no change", name, changed, err, tc.child.GetOwnerReferences())
				}
			}
		})
	}
	// A cluster-scoped owner can own a namespaced child.
	cluster := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "o", UID: "2"}}
	if ok, err := ownership.SetControllerReference(cluster, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "c"}}, env.Scheme); !ok || err != nil {
		t.Errorf("cluster-scoped owner: %v, %v", ok, err)
	}
}

// TestNoWriteWhenTheSchemaDefaultedFields: a wholesale unstructured spec
// of a custom resource whose schema defaults fields (a number, a bool, a
// nested object) is written once; the same call then costs a GET and at
// most one dry run, and writes nothing. Setting a defaulted field away from
// its default and back, or dropping a list, is written.
func TestNoWriteWhenTheSchemaDefaultedFields(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	gvk := gizmoGVK.GroupVersion().WithKind("Doodad")
	for _, fn := range fns {
		t.Run(fn.name, func(t *testing.T) {
			for i, step := range []struct {
				spec map[string]any
				want controllerutil.OperationResult
			}{
				{map[string]any{"color": "red", "tags": []any{"a"}}, "created"},
				{map[string]any{"color": "red", "tags": []any{"a"}}, "unchanged"},
				{map[string]any{"color": "red", "tags": []any{"a"}}, "unchanged"},
				{map[string]any{"color": "red", "replicas": int64(3)}, "updated"},
				{map[string]any{"color": "red", "replicas": int64(3)}, "unchanged"},
				{map[string]any{"color": "red"}, "updated"},
				{map[string]any{"color": "red", "replicas": int64(1)}, "unchanged"},
				{map[string]any{"color": "red", "policy": map[string]any{"mode": "manual"}}, "updated"},
				{map[string]any{"color": "red", "policy": map[string]any{"mode": "manual"}}, "unchanged"},
				{map[string]any{"color": "red", "policy": map[string]any{}}, "updated"},
				{map[string]any{"color": "red"}, "unchanged"},
			} {
				u := unstructuredChild(gvk, ns, "d-"+strings.ToLower(fn.name))
				n.Reset()
				op, err := fn.fn(ctx, c, o, u, func() error { u.Object["spec"] = runtime.DeepCopyJSON(step.spec); return nil })
				if err != nil || op != step.want {
					t.Fatalf("call %d: %s, %v; want %s", i, op, err, step.want)
				}
				if n.Get("GET") != 1 || n.Get("DRYRUN-PUT")+n.Get("DRYRUN-PATCH") > 1 || op == controllerutil.OperationResultNone && n.Writes() != 0 {
					t.Errorf("call %d (%s): requests %s", i, op, n)
				}
				stored := unstructuredChild(gvk, ns, "d-"+strings.ToLower(fn.name))
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(stored), stored); err != nil {
					t.Fatal(err)
				}
				tags, _, _ := unstructured.NestedStringSlice(stored.Object, "spec", "tags")
				if _, want := step.spec["tags"]; want != (len(tags) > 0) {
					t.Errorf("call %d: stored tags %v", i, tags)
				}
			}
		})
	}
}

// TestApplyAdoptionThatFailsSaysWhatItWrote: an adopting Apply removes the
// other controller's reference first; when the apply then fails, the error
// says that the child was released, not only that applying failed.
func TestApplyAdoptionThatFailsSaysWhatItWrote(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	a, b := owner(t, ns, "a"), owner(t, ns, "b")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"k": "v"}}
	if _, err := ownership.Apply(ctx, env.Client, a, cm, "steady-test"); err != nil {
		t.Fatal(err)
	}
	c := interceptor.NewClient(watchClient(t), interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			return apierrors.NewInternalError(errors.New("etcd is sad"))
		},
	})
	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"k": "w"}}
	op, err := ownership.Apply(ctx, c, b, cm, "steady-test", ownership.Adopt{})
	if !apierrors.IsInternalError(err) {
		t.Fatalf("error = %v", err)
	}
	var got corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
		t.Fatal(err)
	}
	if metav1.GetControllerOf(&got) == nil && (op != controllerutil.OperationResultUpdated || !strings.Contains(err.Error(), "removed the controller reference of Widget a")) {
		t.Errorf("the child lost its controller (%v), but the call says %s, %q", got.OwnerReferences, op, err)
	}
}

// TestApplyResultAfterAStaleRead: Apply's result says what the apply did,
// also when its read was stale (a lagging cache): an apply that changes
// nothing is unchanged although another writer changed the child since
// the read.
func TestApplyResultAfterAStaleRead(t *testing.T) {
	env.Require(t)
	t.Skip("BUG: Apply compares the resourceVersion of its read with the answer's: after a stale read " +
		"(another writer's change in between, or a cache with Cache.Unstructured that has not seen the child) " +
		"a no-op apply is reported updated, or created. The manager's client reads unstructured objects " +
		"from the API server by default, so only a race or that option shows it; telling a no-op apply " +
		"apart needs another request (a dry run) or the answer's managedFields times.")
	ctx := context.Background()
	ns := env.Namespace(t)
	a := owner(t, ns, "a")
	desired := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"k": "v"}}
	}
	if _, err := ownership.Apply(ctx, env.Client, a, desired(), "steady-test"); err != nil {
		t.Fatal(err)
	}
	c := staleAfterGet(t, &corev1.ConfigMap{}, false, func(obj client.Object) {
		other := obj.(*corev1.ConfigMap)
		other.Labels = map[string]string{"team": "x"}
	})
	if op, err := ownership.Apply(ctx, c, a, desired(), "steady-test"); err != nil || op != controllerutil.OperationResultNone {
		t.Errorf("apply of the same child after another writer's change: %s, %v; want unchanged", op, err)
	}
}

// TestCreateOrUpdateLocksAlsoWhenMutateRebuildsTheMetadata: a mutate that
// builds the child's metadata anew (name, namespace, labels: the
// resourceVersion read is gone with the rest) still updates under the
// resourceVersion that was read, so another writer's status written since
// the (stale) read is a conflict to requeue on, never overwritten.
func TestCreateOrUpdateLocksAlsoWhenMutateRebuildsTheMetadata(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	size := int64(1)
	call := func(c client.Client) (controllerutil.OperationResult, error) {
		u := unstructuredChild(gizmoGVK, ns, "g")
		return ownership.CreateOrUpdate(ctx, c, o, u, func() error {
			u.Object["metadata"] = map[string]any{"name": "g", "namespace": ns, "labels": map[string]any{"app": "g"}}
			return unstructured.SetNestedField(u.Object, size, "spec", "size")
		})
	}
	if _, err := call(env.Client); err != nil {
		t.Fatal(err)
	}
	c := staleAfterGet(t, unstructuredChild(gizmoGVK, ns, "g"), false, func(obj client.Object) {
		other := obj.(*unstructured.Unstructured)
		_ = unstructured.SetNestedField(other.Object, "Running", "status", "phase")
	})
	size = 2
	_, errs := requeue(t, func() (controllerutil.OperationResult, error) { return call(c) })
	for _, err := range errs {
		if !apierrors.IsConflict(err) {
			t.Errorf("failed with %v, want a conflict", err)
		}
	}
	stored := unstructuredChild(gizmoGVK, ns, "g")
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(stored), stored); err != nil {
		t.Fatal(err)
	}
	phase, _, _ := unstructured.NestedString(stored.Object, "status", "phase")
	got, _, _ := unstructured.NestedInt64(stored.Object, "spec", "size")
	if phase != "Running" || got != 2 {
		t.Errorf("stored status.phase %q, spec.size %d; want Running, 2", phase, got)
	}
}

// TestCreateOrUpdateLocksATypedChildWhoseMetadataMutateRebuilds: the same
// for a built-in kind, where an update without a resourceVersion is not
// refused but overwrites: another writer's data key written since the read
// must survive.
func TestCreateOrUpdateLocksATypedChildWhoseMetadataMutateRebuilds(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	value := "1"
	call := func(c client.Client) (controllerutil.OperationResult, error) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}}
		return ownership.CreateOrUpdate(ctx, c, o, cm, func() error {
			cm.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "cm", Labels: map[string]string{"app": "cm"}}
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			cm.Data["ours"] = value
			return nil
		})
	}
	if _, err := call(env.Client); err != nil {
		t.Fatal(err)
	}
	c := staleAfterGet(t, &corev1.ConfigMap{}, false, func(obj client.Object) {
		other := obj.(*corev1.ConfigMap)
		other.Data["theirs"] = "x"
	})
	value = "2"
	_, errs := requeue(t, func() (controllerutil.OperationResult, error) { return call(c) })
	for _, err := range errs {
		if !apierrors.IsConflict(err) {
			t.Errorf("failed with %v, want a conflict", err)
		}
	}
	var got corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cm"}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Data["theirs"] != "x" || got.Data["ours"] != "2" {
		t.Errorf("stored data %v: the other writer's key or ours is lost", got.Data)
	}
}

// TestUnstructuredChildWithGoInts: an unstructured child whose mutate
// writes plain Go ints (u.Object["spec"] = map[string]any{"size": 2}, as
// the JSON encoder and controllerutil accept) is written, not a panic.
func TestUnstructuredChildWithGoInts(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	apply := func(ctx context.Context, c client.Client, o, child client.Object, f ownership.MutateFn, _ ...ownership.Adopt) (controllerutil.OperationResult, error) {
		if err := f(); err != nil {
			return controllerutil.OperationResultNone, err
		}
		return ownership.Apply(ctx, c, o, child, "steady-test")
	}
	for _, fn := range append(fns, fnCase{"Apply", apply}) {
		t.Run(fn.name, func(t *testing.T) {
			name := "g-" + strings.ToLower(fn.name)
			for i, want := range []controllerutil.OperationResult{"created", "unchanged"} {
				u := unstructuredChild(gizmoGVK, ns, name)
				var op controllerutil.OperationResult
				var err error
				func() {
					defer func() {
						if r := recover(); r != nil {
							err = fmt.Errorf("panic: %v", r)
						}
					}()
					op, err = fn.fn(ctx, env.Client, o, u, func() error {
						u.Object["spec"] = map[string]any{"size": 2, "ratio": float32(0.5), "tags": []string{"a"}, "labels": map[string]string{"k": "v"}}
						return nil
					})
				}()
				if err != nil || op != want {
					t.Fatalf("call %d: %s, %v; want %s", i, op, err, want)
				}
			}
		})
	}
}

// TestApplyKeepsTheChildsOtherOwnerReferences: the non-controller owner
// references the caller put on the child (SetOwnerReference) are applied
// beside the controller reference, not dropped; a controller reference of
// another owner that the child was read with is not applied back.
func TestApplyKeepsTheChildsOtherOwnerReferences(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	a, b, x := owner(t, ns, "a"), owner(t, ns, "b"), owner(t, ns, "x")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"k": "v"}}
	if _, err := ownership.SetOwnerReference(b, cm, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if _, err := ownership.Apply(ctx, env.Client, a, cm, "steady-test"); err != nil {
		t.Fatal(err)
	}
	var got corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.OwnerReferences) != 2 || !metav1.IsControlledBy(&got, a) {
		t.Errorf("stored owner references %v, want a's (controller) and b's", got.OwnerReferences)
	}
	// x adopts the child it read (holding a's controller reference).
	if _, err := ownership.Apply(ctx, env.Client, x, &got, "steady-test", ownership.Adopt{}); err != nil {
		t.Fatal(err)
	}
	var after corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &after); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(&after, x) || len(after.OwnerReferences) != 2 {
		t.Errorf("after the adoption: %v, want x's (controller) and b's", after.OwnerReferences)
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

// TestDroppingAllOurLabelsKeepsAnotherWritersNewOnes: CreateOrPatch
// dropping every label it read (and every annotation) removes those, not
// the labels another writer added since a stale read.
func TestDroppingAllOurLabelsKeepsAnotherWritersNewOnes(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}}
	if _, err := ownership.CreateOrPatch(ctx, env.Client, o, cm, func() error {
		cm.Labels, cm.Annotations = map[string]string{"ours": "1"}, map[string]string{"ours": "1"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c := staleAfterGet(t, &corev1.ConfigMap{}, false, func(obj client.Object) {
		other := obj.(*corev1.ConfigMap)
		other.Labels["theirs"], other.Annotations["theirs"] = "x", "x"
	})
	_, errs := requeue(t, func() (controllerutil.OperationResult, error) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}}
		return ownership.CreateOrPatch(ctx, c, o, cm, func() error { cm.Labels, cm.Annotations = nil, nil; return nil })
	})
	for _, err := range errs {
		if !apierrors.IsConflict(err) {
			t.Errorf("failed with %v, want a conflict", err)
		}
	}
	var got corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
		t.Fatal(err)
	}
	if got.Labels["theirs"] != "x" || got.Annotations["theirs"] != "x" || got.Labels["ours"] != "" || got.Annotations["ours"] != "" {
		t.Errorf("stored labels %v, annotations %v; want theirs only", got.Labels, got.Annotations)
	}
}

// TestRemovingTheWholeStatusRemovesWhatWasRead: an unstructured child's
// mutate that deletes the status removes the status fields it read, not
// those another writer set since a stale read.
func TestRemovingTheWholeStatusRemovesWhatWasRead(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	for _, gvk := range []schema.GroupVersionKind{testapi.GroupVersion.WithKind("Widget"), gizmoGVK} {
		t.Run(gvk.Kind, func(t *testing.T) {
			u := unstructuredChild(gvk, ns, "s")
			if _, err := ownership.CreateOrPatch(ctx, env.Client, o, u, func() error {
				return unstructured.SetNestedField(u.Object, int64(3), "status", "replicas")
			}); err != nil {
				t.Fatal(err)
			}
			c := staleAfterGet(t, unstructuredChild(gvk, ns, "s"), gvk.Kind == "Widget", func(obj client.Object) {
				_ = unstructured.SetNestedField(obj.(*unstructured.Unstructured).Object, "Running", "status", "phase")
			})
			u = unstructuredChild(gvk, ns, "s")
			if _, err := ownership.CreateOrPatch(ctx, c, o, u, func() error { delete(u.Object, "status"); return nil }); err != nil && !apierrors.IsConflict(err) {
				t.Fatal(err)
			}
			stored := unstructuredChild(gvk, ns, "s")
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(stored), stored); err != nil {
				t.Fatal(err)
			}
			phase, _, _ := unstructured.NestedString(stored.Object, "status", "phase")
			if _, has, _ := unstructured.NestedInt64(stored.Object, "status", "replicas"); phase != "Running" || has {
				t.Errorf("stored status %v: want the other writer's phase kept, our replicas removed", stored.Object["status"])
			}
		})
	}
}

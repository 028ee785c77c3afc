package ownership_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/testenv"
)

// gcEnvironment starts a second control plane, with kube-controller-manager
// (the garbage collector), for the tests of a restore: the package's own
// runs without it (some tests keep children of owners that do not exist).
// It stops when the test ends.
func gcEnvironment(t *testing.T) *testenv.Environment {
	t.Helper()
	env.Require(t)
	if testing.Short() {
		t.Skip("starts a second control plane, with the garbage collector")
	}
	e := testapi.NewEnv(testenv.WithControllerManager{})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// restoreCase is one child of the owner, written as a reconcile does.
type restoreCase struct {
	name  string
	empty func(ns string) client.Object
	// write is one call of the reconcile for the child: create it, or
	// take it back.
	write func(ctx context.Context, c client.Client, o, child client.Object) (controllerutil.OperationResult, error)
}

func restoreCases() []restoreCase {
	configMap := func(name string) func(ns string) client.Object {
		return func(ns string) client.Object {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		}
	}
	data := func(child client.Object) ownership.MutateFn {
		return func() error { child.(*corev1.ConfigMap).Data = map[string]string{"k": "v"}; return nil }
	}
	return []restoreCase{
		{"CreateOrUpdate", configMap("u"), func(ctx context.Context, c client.Client, o, child client.Object) (controllerutil.OperationResult, error) {
			return ownership.CreateOrUpdate(ctx, c, o, child, data(child), ownership.RecordOwner{})
		}},
		{"CreateOrUpdate of a Deployment", func(ns string) client.Object {
			return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}}
		}, func(ctx context.Context, c client.Client, o, child client.Object) (controllerutil.OperationResult, error) {
			return ownership.CreateOrUpdate(ctx, c, o, child, deployment(child.(*appsv1.Deployment), "nginx:1"), ownership.RecordOwner{})
		}},
		{"Apply", configMap("a"), func(ctx context.Context, c client.Client, o, child client.Object) (controllerutil.OperationResult, error) {
			_ = data(child)()
			return applyObject(ctx, c, o, child, "steady-test", ownership.RecordOwner{})
		}},
		// SetControllerReference in a controllerutil.CreateOrUpdate mutate,
		// as code that builds its own write does.
		{"SetControllerReference", configMap("s"), func(ctx context.Context, c client.Client, o, child client.Object) (controllerutil.OperationResult, error) {
			return controllerutil.CreateOrUpdate(ctx, c, child, func() error {
				_ = data(child)()
				_, err := ownership.SetControllerReference(o, child, c.Scheme(), ownership.RecordOwner{})
				return err
			})
		}},
	}
}

// backup reads children as a backup tool stores them.
func backup(t *testing.T, c client.Client, children []client.Object) []client.Object {
	t.Helper()
	var out []client.Object
	for _, child := range children {
		b := child.DeepCopyObject().(client.Object)
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(child), b); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// restore creates the backed-up children again as Velero does: the
// metadata the API server owns and the owner references dropped, labels
// and annotations kept.
func restore(t *testing.T, c client.Client, saved []client.Object) {
	t.Helper()
	for _, s := range saved {
		r := s.DeepCopyObject().(client.Object)
		r.SetUID("")
		r.SetResourceVersion("")
		r.SetOwnerReferences(nil)
		r.SetManagedFields(nil)
		r.SetCreationTimestamp(metav1.Time{})
		r.SetGeneration(0)
		if err := c.Create(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
}

// waitGone waits until obj is not found.
func waitGone(t *testing.T, c client.Client, obj client.Object, what string) {
	t.Helper()
	testenv.Eventually(t, what, func() error {
		err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("%s/%s still there", obj.GetNamespace(), obj.GetName())
	}, 60*time.Second)
}

// TestRestoredChildrenAreTakenBack restores as a backup tool does: the
// owner and its children deleted with orphan propagation (the garbage
// collector removes their owner references), the owner created again
// (a new UID), the children created again without owner references,
// labels and annotations kept. One call per child takes each back, with
// no error and no duplicate: its controller reference now holds the new
// UID. Deleting the owner then has the garbage collector delete them. For
// each form of the record, written with RecordOwner{}: the labels, and
// the annotation of an owner whose name is not a label value (70
// characters).
func TestRestoredChildrenAreTakenBack(t *testing.T) {
	e := gcEnvironment(t)
	c, n, err := testapi.NewCountingClient(e.Config, e.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	c = testapi.Remembering(c, e.Scheme)
	long := strings.Repeat("l", 70)
	for _, tc := range []struct {
		name, owner string
	}{{"labels", "app"}, {"annotation of a long name", long}} {
		t.Run(tc.name, func(t *testing.T) {
			restoreAndTakeBack(t, e, c, n, tc.owner)
		})
	}
}

// restoreAndTakeBack is TestRestoredChildrenAreTakenBack for an owner of
// the given name.
func restoreAndTakeBack(t *testing.T, e *testenv.Environment, c client.Client, n *testapi.Counter, ownerName string) {
	ctx := context.Background()
	ns := e.Namespace(t)
	o := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ownerName}}
	if err := e.Client.Create(ctx, o); err != nil {
		t.Fatal(err)
	}
	cases := restoreCases()
	var children []client.Object
	for _, rc := range cases {
		child := rc.empty(ns)
		if _, err := rc.write(ctx, c, o, child); err != nil {
			t.Fatalf("%s: %v", rc.name, err)
		}
		children = append(children, rc.empty(ns))
	}
	saved := backup(t, e.Client, children)
	annotation := "test.steady.dev/Widget/" + ns + "/" + ownerName
	for i, s := range saved {
		kind, name, ann := s.GetLabels()[ownership.OwnerKindLabel], s.GetLabels()[ownership.OwnerNameLabel], s.GetAnnotations()[ownership.OwnerAnnotation]
		want := [3]string{"Widget.test.steady.dev", ownerName, ""}
		if len(ownerName) > 63 {
			want = [3]string{"", "", annotation}
		}
		if got := [3]string{kind, name, ann}; got != want {
			t.Errorf("%s: record %q, want %q (labels kind and name, annotation)", cases[i].name, got, want)
		}
	}

	// The disaster: the owner is deleted, orphaning its children, and the
	// children are lost too.
	oldUID := o.UID
	if err := e.Client.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil {
		t.Fatal(err)
	}
	waitGone(t, e.Client, o, "the owner, its children orphaned")
	for _, child := range backup(t, e.Client, children) {
		if len(child.GetOwnerReferences()) != 0 {
			t.Fatalf("%s: owner references %v after an orphaning delete", child.GetName(), child.GetOwnerReferences())
		}
		if err := e.Client.Delete(ctx, child); err != nil {
			t.Fatal(err)
		}
		waitGone(t, e.Client, child, "the child")
	}

	// The restore.
	o = &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ownerName}}
	if err := e.Client.Create(ctx, o); err != nil {
		t.Fatal(err)
	}
	if o.UID == oldUID {
		t.Fatal("the owner kept its UID")
	}
	restore(t, e.Client, saved)

	// One reconcile: one call per child.
	for _, rc := range cases {
		n.Reset()
		op, err := rc.write(ctx, c, o, rc.empty(ns))
		if err != nil || op != controllerutil.OperationResultUpdated {
			t.Errorf("%s: %s, %v (requests %s); want updated, no error", rc.name, op, err, n)
		}
	}
	for i, child := range backup(t, e.Client, children) {
		if !metav1.IsControlledBy(child, o) || len(child.GetOwnerReferences()) != 1 {
			t.Errorf("%s: owner references %v, want the new owner's (UID %s) alone", cases[i].name, child.GetOwnerReferences(), o.UID)
		}
	}
	var cms corev1.ConfigMapList
	if err := e.Client.List(ctx, &cms, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var deploys appsv1.DeploymentList
	if err := e.Client.List(ctx, &deploys, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	own := 0
	for _, cm := range cms.Items {
		if cm.Name != "kube-root-ca.crt" {
			own++
		}
	}
	if own != 3 || len(deploys.Items) != 1 {
		t.Errorf("%d ConfigMaps and %d Deployments, want 3 and 1: a duplicate", own, len(deploys.Items))
	}
	// Taken back, the children are converged: the next reconcile stores
	// nothing (a mutate that drops server defaults sends one write the
	// server finds nothing in), and the one after writes nothing. The
	// Deployment is the exception: the deployment controller of this control
	// plane writes its status, so its resourceVersion (which the verdict is
	// remembered for) moves on its own: at most one write the server finds
	// nothing in each time, and its generation (our spec) stays.
	version := func(obj client.Object) string {
		if _, ok := obj.(*appsv1.Deployment); ok {
			return fmt.Sprintf("generation %d", obj.GetGeneration())
		}
		return "resourceVersion " + obj.GetResourceVersion()
	}
	for round, most := range []int{1, 0} {
		for i, rc := range cases {
			before := version(backup(t, e.Client, children)[i])
			limit := most
			if _, ok := children[i].(*appsv1.Deployment); ok {
				limit = 1
			}
			n.Reset()
			if op, err := rc.write(ctx, c, o, rc.empty(ns)); err != nil || op != controllerutil.OperationResultNone || n.Writes() > limit {
				t.Errorf("%s again (%d): %s, %v (requests %s); want unchanged, at most %d writes", rc.name, round, op, err, n, limit)
			}
			if after := version(backup(t, e.Client, children)[i]); after != before {
				t.Errorf("%s again (%d): %s -> %s; want nothing stored", rc.name, round, before, after)
			}
		}
	}

	if err := e.Client.Delete(ctx, o); err != nil {
		t.Fatal(err)
	}
	for _, child := range children {
		waitGone(t, e.Client, child, "the child of the deleted owner (garbage collector)")
	}
}

// TestAChildRestoredWithAStaleReferenceIsCollected is the finding behind
// the rule for a child restored with its owner references (a restore of
// etcd, or a tool that keeps them) after its owner was created again: the
// garbage collector looks the owner up by name, finds one with another
// UID, takes the owner for gone and deletes the child.
func TestAChildRestoredWithAStaleReferenceIsCollected(t *testing.T) {
	e := gcEnvironment(t)
	ctx := context.Background()
	ns := e.Namespace(t)
	o := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}
	if err := e.Client.Create(ctx, o); err != nil {
		t.Fatal(err)
	}
	stale := metav1.OwnerReference{APIVersion: testapi.GroupVersion.String(), Kind: "Widget", Name: "app",
		UID: types.UID("0d6fd3a2-0000-4000-8000-000000000000"), Controller: new(true), BlockOwnerDeletion: new(true)}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restored",
		OwnerReferences: []metav1.OwnerReference{stale},
		Annotations:     map[string]string{ownership.OwnerAnnotation: "test.steady.dev/Widget/" + ns + "/app"}}}
	if err := e.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	start, seen := time.Now(), 0
	for ; ; seen++ {
		err := e.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
		if apierrors.IsNotFound(err) {
			break
		}
		if err != nil || time.Since(start) > time.Minute {
			t.Fatalf("the child with a stale owner reference is still there after %v: %v", time.Since(start), err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A figure for docs/ownership.md, not asserted.
	t.Logf("collected %v after its creation (%d reads found it)", time.Since(start).Round(time.Millisecond), seen)
}

// TestAStaleReferenceIsReplaced: a child restored with a controller
// reference to an earlier owner of the owner's kind and name (the old UID)
// and the owner's record (in labels, or in the annotation: either form
// is read)
// is taken back by each way to write it, if the garbage collector has not
// deleted it first: the stale reference is replaced, the other owners
// kept. Without the record (a child written
// before the record existed) it is another owner's, as before. An owner
// passed that is itself stale (the child's reference holds the UID the API
// server has now) is a conflict, and the child is left as it was.
func TestAStaleReferenceIsReplaced(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "app")
	other := owner(t, ns, "other")
	rec := "test.steady.dev/Widget/" + ns + "/app"
	staleRef := metav1.OwnerReference{APIVersion: testapi.GroupVersion.String(), Kind: "Widget", Name: "app",
		UID: "0d6fd3a2-0000-4000-8000-000000000000", Controller: new(true), BlockOwnerDeletion: new(true)}
	otherRef := metav1.OwnerReference{APIVersion: testapi.GroupVersion.String(), Kind: "Widget", Name: "other", UID: other.UID}
	restored := func(name string, labels, annotations map[string]string, refs ...metav1.OwnerReference) *corev1.ConfigMap {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations, OwnerReferences: refs},
			Data: map[string]string{"k": "v"}}
		if err := env.Client.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		return cm
	}
	for _, fn := range allFns {
		t.Run(fn.name, func(t *testing.T) {
			name := "cm-" + map[string]string{"CreateOrUpdate": "u", "Apply": "a"}[fn.name]
			write := func(o client.Object, name string) (controllerutil.OperationResult, error) {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				return fn.fn(ctx, c, o, cm, func() error { cm.Data = map[string]string{"k": "v"}; return nil }, ownership.RecordOwner{})
			}
			// The record in the annotation (read for any owner) and in
			// labels.
			var got corev1.ConfigMap
			for _, form := range []struct {
				suffix              string
				labels, annotations map[string]string
			}{
				{"", nil, map[string]string{ownership.OwnerAnnotation: rec}},
				{"-labels", map[string]string{ownership.OwnerKindLabel: "Widget.test.steady.dev", ownership.OwnerNameLabel: "app"}, nil},
			} {
				restored(name+form.suffix, form.labels, form.annotations, staleRef, otherRef)
				if op, err := write(o, name+form.suffix); err != nil || op != controllerutil.OperationResultUpdated {
					t.Fatalf("%s: %s, %v; want updated", name+form.suffix, op, err)
				}
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + form.suffix}, &got); err != nil {
					t.Fatal(err)
				}
				if !metav1.IsControlledBy(&got, o) || len(got.OwnerReferences) != 2 || got.OwnerReferences[0].UID == staleRef.UID && got.OwnerReferences[1].UID == staleRef.UID {
					t.Errorf("%s: owner references %v: want the owner's and the other (non-controller) one", name+form.suffix, got.OwnerReferences)
				}
				for _, r := range got.OwnerReferences {
					if r.UID == staleRef.UID {
						t.Errorf("%s: the stale reference is still there: %v", name+form.suffix, got.OwnerReferences)
					}
				}
			}

			// Without the record: another owner's child, as before.
			restored(name+"-norecord", nil, nil, staleRef)
			n.Reset()
			_, err := write(o, name+"-norecord")
			var aoe *ownership.AlreadyOwnedError
			if !errors.As(err, &aoe) || aoe.Controller != "Widget app" || n.Writes() != 0 {
				t.Errorf("without the record: %v (requests %s); want an *AlreadyOwnedError, no write", err, n)
			}

			// The owner passed is the stale one: the child's reference is
			// to the owner the API server has now.
			current := restored(name+"-current", nil, map[string]string{ownership.OwnerAnnotation: rec},
				metav1.OwnerReference{APIVersion: testapi.GroupVersion.String(), Kind: "Widget", Name: "app", UID: o.UID, Controller: new(true), BlockOwnerDeletion: new(true)})
			old := o.DeepCopy()
			old.UID = staleRef.UID
			n.Reset()
			_, err = write(old, name+"-current")
			if !apierrors.IsConflict(err) || n.Writes() != 0 {
				t.Errorf("a stale owner passed: %v (requests %s); want a conflict, no write", err, n)
			}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(current), &got); err != nil {
				t.Fatal(err)
			}
			if got.ResourceVersion != current.ResourceVersion {
				t.Errorf("the child was written: %v", got.OwnerReferences)
			}
		})
	}
}

// TestAChildRecordedForAnotherOwnerIsRefused: a child without a controller
// whose record names another owner (its owner's orphaned child, or a
// restored one), in the labels, the annotation, or one of them while the
// other names the owner, is refused by each way to write it, with or
// without RecordOwner{} (the record is always read), with an
// *AlreadyOwnedError naming both owners and the form that refused it, and
// left as it was; Adopt{} takes it and removes the other owner's record:
// with RecordOwner{}, it records the new owner in labels alone; without,
// it writes no record (a form that names the new owner stays).
func TestAChildRecordedForAnotherOwnerIsRefused(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	a := owner(t, ns, "a")
	labelsOf := func(name string) map[string]string {
		return map[string]string{ownership.OwnerKindLabel: "Widget.test.steady.dev", ownership.OwnerNameLabel: name, "app": "x"}
	}
	annotationOf := func(name string) map[string]string {
		return map[string]string{ownership.OwnerAnnotation: "test.steady.dev/Widget/" + ns + "/" + name, "keep": "1"}
	}
	app := map[string]string{"app": "x"}
	for _, mode := range []struct {
		name string
		opts []option
	}{{"recording", []option{ownership.RecordOwner{}}}, {"not recording", nil}} {
		for _, form := range []struct {
			name                 string
			labels, annotations  map[string]string
			recorded, recordedIn string
			// adoptedLabels and adoptedAnnotation are what the child
			// carries once adopted without RecordOwner.
			adoptedLabels     map[string]string
			adoptedAnnotation string
		}{
			{"annotation", app, annotationOf("b"), "Widget " + ns + "/b", "annotation", app, ""},
			{"labels", labelsOf("b"), map[string]string{"keep": "1"}, "Widget b", "labels", app, ""},
			{"ours in labels, another's in the annotation", labelsOf("a"), annotationOf("b"), "Widget " + ns + "/b", "annotation", labelsOf("a"), ""},
			{"ours in the annotation, another's in labels", labelsOf("b"), annotationOf("a"), "Widget b", "labels", app, annotationOf("a")[ownership.OwnerAnnotation]},
		} {
			for _, fn := range allFns {
				t.Run(mode.name+"/"+form.name+"/"+fn.name, func(t *testing.T) {
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "b-" + strings.ToLower(fn.name) + "-",
						Labels: form.labels, Annotations: form.annotations}}
					if err := env.Client.Create(ctx, cm); err != nil {
						t.Fatal(err)
					}
					want := cm.DeepCopy()
					write := func(opts ...option) (controllerutil.OperationResult, error) {
						opts = append(slices.Clone(mode.opts), opts...)
						mine := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cm.Name}}
						mutate := func() error { mine.Data = map[string]string{"k": "a"}; return nil }
						if fn.name == "Apply" {
							_ = mutate()
							var aopts []ownership.ApplyOption
							for _, o := range opts {
								aopts = append(aopts, o.(ownership.ApplyOption))
							}
							return applyObject(ctx, c, a, mine, "steady-test", aopts...)
						}
						return fn.fn(ctx, c, a, mine, mutate, opts...)
					}
					n.Reset()
					_, err := write()
					var aoe *ownership.AlreadyOwnedError
					if !errors.As(err, &aoe) || aoe.Recorded != form.recorded || aoe.RecordedIn != form.recordedIn || aoe.Owner != "Widget "+ns+"/a" || aoe.Controller != "" {
						t.Fatalf("error = %v (%#v), want an *AlreadyOwnedError naming the recorded owner %q in %s", err, aoe, form.recorded, form.recordedIn)
					}
					key := map[string]string{"labels": ownership.OwnerKindLabel, "annotation": ownership.OwnerAnnotation}[form.recordedIn]
					if msg := err.Error(); !strings.Contains(msg, key) || !strings.Contains(msg, form.recorded) || !strings.Contains(msg, "Widget "+ns+"/a") {
						t.Errorf("message %q does not name the %s and both owners", msg, form.recordedIn)
					}
					if n.Writes() != 0 {
						t.Errorf("requests %s: a refused child was written", n)
					}
					var got corev1.ConfigMap
					if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
						t.Fatal(err)
					}
					if got.ResourceVersion != want.ResourceVersion {
						t.Errorf("the refused child changed: %v", got.ObjectMeta)
					}
					if op, err := write(ownership.Adopt{}); err != nil || op != controllerutil.OperationResultUpdated {
						t.Fatalf("adopt: %s, %v", op, err)
					}
					if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
						t.Fatal(err)
					}
					wantLabels, wantAnnotation := labelsOf("a"), ""
					if mode.opts == nil {
						wantLabels, wantAnnotation = form.adoptedLabels, form.adoptedAnnotation
					}
					if !metav1.IsControlledBy(&got, a) || !reflect.DeepEqual(got.Labels, wantLabels) ||
						got.Annotations[ownership.OwnerAnnotation] != wantAnnotation || got.Annotations["keep"] != "1" {
						t.Errorf("after adoption: owners %v, labels %v, annotations %v; want labels %v, the record annotation %q, keep=1 kept", got.OwnerReferences, got.Labels, got.Annotations, wantLabels, wantAnnotation)
					}
				})
			}
		}
	}
}

// TestRestoreThroughALaggingCache: the restore seen through a manager's
// client whose cache is held 300ms back. Once the cache shows the restored
// children, one call per child takes each back; before it does, a call
// may fail (a conflict on a stale read) and is retried as a controller
// requeues: the calls end with the children taken back, none created
// twice.
func TestRestoreThroughALaggingCache(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startCached(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "app")
	for _, wait := range []bool{true, false} {
		t.Run(fmt.Sprintf("cache caught up %v", wait), func(t *testing.T) {
			names := map[bool]string{true: "caught-up", false: "behind"}
			var children []client.Object
			for _, fn := range allFns {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names[wait] + "-" + strings.ToLower(fn.name)}}
				if _, err := fn.fn(ctx, cc.Client, o, cm, func() error { cm.Data = map[string]string{"k": "v"}; return nil }, ownership.RecordOwner{}); err != nil {
					t.Fatal(err)
				}
				children = append(children, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cm.Name}})
			}
			saved := backup(t, env.Client, children)
			// The environment has no garbage collector: the children are
			// deleted with the owner by hand.
			if err := env.Client.Delete(ctx, o); err != nil {
				t.Fatal(err)
			}
			for _, child := range children {
				if err := env.Client.Delete(ctx, child); err != nil {
					t.Fatal(err)
				}
			}
			o = owner(t, ns, "app")
			restore(t, env.Client, saved)
			if wait {
				cachedSees(t, cc, o)
				for _, child := range children {
					cachedSees(t, cc, child)
				}
			}
			for i, fn := range allFns {
				call := func() (controllerutil.OperationResult, error) {
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: children[i].GetName()}}
					return fn.fn(ctx, cc.Client, o, cm, func() error { cm.Data = map[string]string{"k": "v"}; return nil }, ownership.RecordOwner{})
				}
				if wait {
					if op, err := call(); err != nil || op != controllerutil.OperationResultUpdated {
						t.Errorf("%s: %s, %v; want updated", fn.name, op, err)
					}
					continue
				}
				if _, errs := requeue(t, call); len(errs) > 0 {
					t.Logf("%s: %d calls failed before the cache caught up: %v", fn.name, len(errs), errs[0])
				}
			}
			for i, child := range backup(t, env.Client, children) {
				if !metav1.IsControlledBy(child, o) || len(child.GetOwnerReferences()) != 1 {
					t.Errorf("%s: owner references %v, want the new owner's (UID %s) alone", allFns[i].name, child.GetOwnerReferences(), o.UID)
				}
			}
			if err := env.Client.Delete(ctx, o); err != nil {
				t.Fatal(err)
			}
			o = owner(t, ns, "app")
		})
	}
}

// TestChildrenWithoutARecordKeepWorking: a child written before the record
// existed (our controller reference, no record) gets the record, in
// labels, with one write on its next call, then costs nothing more; a child without a
// controller and without a record is taken, as controllerutil does.
func TestChildrenWithoutARecordKeepWorking(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "app")
	for _, fn := range allFns {
		t.Run(fn.name, func(t *testing.T) {
			for _, controlled := range []bool{true, false} {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("old-%s-%v", strings.ToLower(fn.name), controlled)},
					Data: map[string]string{"k": "v"}}
				if controlled {
					cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: testapi.GroupVersion.String(), Kind: "Widget", Name: "app", UID: o.UID,
						Controller: new(true), BlockOwnerDeletion: new(true)}}
				}
				if err := env.Client.Create(ctx, cm); err != nil {
					t.Fatal(err)
				}
				for i := 0; i < 3; i++ {
					mine := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cm.Name}}
					n.Reset()
					op, err := fn.fn(ctx, c, o, mine, func() error { mine.Data = map[string]string{"k": "v"}; return nil }, ownership.RecordOwner{})
					want := map[bool]controllerutil.OperationResult{true: controllerutil.OperationResultUpdated, false: controllerutil.OperationResultNone}[i == 0]
					if err != nil || op != want {
						t.Errorf("controlled %v, call %d: %s, %v (requests %s); want %s", controlled, i, op, err, n, want)
					}
					if i > 0 && n.Writes() != 0 {
						t.Errorf("controlled %v, call %d: requests %s, want no write", controlled, i, n)
					}
				}
				var got corev1.ConfigMap
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
					t.Fatal(err)
				}
				if !metav1.IsControlledBy(&got, o) || got.Labels[ownership.OwnerKindLabel] != "Widget.test.steady.dev" || got.Labels[ownership.OwnerNameLabel] != "app" || len(got.Annotations) != 0 {
					t.Errorf("controlled %v: owners %v, labels %v, annotations %v", controlled, got.OwnerReferences, got.Labels, got.Annotations)
				}
			}
		})
	}
}

// TestTheRecordInMemory: SetControllerReference records the owner in
// labels when its kind and name are label values ("<Kind>.<group>", the
// core group as the kind alone; no namespace), else in the annotation
// (the core group and a cluster-scoped owner as empty parts), never both;
// takes back a child whose stale controller reference is the owner's kind
// and name and whose record, in either form, is the owner's; refuses one
// recorded for another owner in either form; and RemoveOwnerReference
// removes the record with the controller reference.
func TestTheRecordInMemory(t *testing.T) {
	s := testapi.Scheme()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", UID: "new"}}
	cm := func(annotations map[string]string, refs ...metav1.OwnerReference) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Annotations: annotations, OwnerReferences: refs}}
	}
	long := strings.Repeat("l", 70)
	for _, tc := range []struct {
		owner            client.Object
		kind, name, want string // the labels' values, or the annotation's
	}{
		{owner: w, kind: "Widget.test.steady.dev", name: "app"},
		{owner: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "1"}}, kind: "Secret", name: "s"},
		{owner: &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "cluster", UID: "2"}}, kind: "Widget.test.steady.dev", name: "cluster"},
		{owner: &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: long, UID: "3"}}, want: "test.steady.dev/Widget/ns/" + long},
		{owner: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: strings.Repeat("s", 63), UID: "4"}}, kind: "Secret", name: strings.Repeat("s", 63)},
		{owner: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:view", UID: "5"}}, want: "rbac.authorization.k8s.io/ClusterRole//system:view"},
	} {
		child := cm(map[string]string{"keep": "1"})
		child.Labels = map[string]string{"app": "x"}
		changed, err := ownership.SetControllerReference(tc.owner, child, s, ownership.RecordOwner{})
		kind, name, ann := child.Labels[ownership.OwnerKindLabel], child.Labels[ownership.OwnerNameLabel], child.Annotations[ownership.OwnerAnnotation]
		if !changed || err != nil || kind != tc.kind || name != tc.name || ann != tc.want || child.Labels["app"] != "x" || child.Annotations["keep"] != "1" {
			t.Errorf("%s: %v, %v, labels %v, annotations %v; want kind %q, name %q, annotation %q", tc.owner.GetName(), changed, err, child.Labels, child.Annotations, tc.kind, tc.name, tc.want)
		}
		if changed, err := ownership.SetControllerReference(tc.owner, child, s, ownership.RecordOwner{}); changed || err != nil {
			t.Errorf("%s again: %v, %v; want no change", tc.owner.GetName(), changed, err)
		}
		if !ownership.RemoveOwnerReference(tc.owner, child) || len(child.Labels) != 1 || len(child.Annotations) != 1 {
			t.Errorf("%s removed: labels %v, annotations %v; want app=x and keep=1 alone", tc.owner.GetName(), child.Labels, child.Annotations)
		}
	}

	stale := metav1.OwnerReference{APIVersion: testapi.GroupVersion.String(), Kind: "Widget", Name: "app", UID: "old", Controller: new(true)}
	rec := map[string]string{ownership.OwnerAnnotation: "test.steady.dev/Widget/ns/app"}
	labels := func(kind, name string) map[string]string {
		return map[string]string{ownership.OwnerKindLabel: kind, ownership.OwnerNameLabel: name}
	}
	recLabels := labels("Widget.test.steady.dev", "app")
	for _, form := range []struct {
		name        string
		labels, ann map[string]string
		// wantLabels and wantAnn are the record after the take-back: the
		// labels, as the owner's record is written, are left as they are;
		// the annotation alone (an owner that fits in the labels is not
		// recorded there) is taken back and rewritten in the labels.
		wantLabels, wantAnn map[string]string
	}{{"annotation", nil, rec, recLabels, nil}, {"labels", recLabels, nil, recLabels, nil}, {"both", recLabels, rec, recLabels, rec}} {
		child := cm(form.ann, stale)
		child.Labels = form.labels
		if changed, err := ownership.SetControllerReference(w, child, s, ownership.RecordOwner{}); !changed || err != nil || !metav1.IsControlledBy(child, w) || len(child.OwnerReferences) != 1 {
			t.Errorf("stale reference, recorded in %s: %v, %v, %v", form.name, changed, err, child.OwnerReferences)
		}
		if !reflect.DeepEqual(child.Labels, form.wantLabels) || len(child.Annotations) != len(form.wantAnn) || !maps.Equal(child.Annotations, form.wantAnn) {
			t.Errorf("stale reference, recorded in %s: labels %v, annotations %v; want labels %v, annotations %v", form.name, child.Labels, child.Annotations, form.wantLabels, form.wantAnn)
		}
		// Another kind or group of the same name, recorded as ours (the
		// record copied by hand): not ours.
		for _, ref := range []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Widget", Name: "app", UID: "old", Controller: new(true)},
			{APIVersion: testapi.GroupVersion.String(), Kind: "Gadget", Name: "app", UID: "old", Controller: new(true)},
			{APIVersion: testapi.GroupVersion.String(), Kind: "Widget", Name: "other", UID: "old", Controller: new(true)},
		} {
			child := cm(form.ann, ref)
			child.Labels = form.labels
			var aoe *ownership.AlreadyOwnedError
			if changed, err := ownership.SetControllerReference(w, child, s, ownership.RecordOwner{}); changed || !errors.As(err, &aoe) || child.OwnerReferences[0].UID != "old" {
				t.Errorf("%s, %v: %v, %v; want an *AlreadyOwnedError and no change", form.name, ref, changed, err)
			}
		}
	}
	// A restore into another namespace (Velero's namespace mapping): the
	// record of a namespaced owner is matched without its namespace, and
	// rewritten, in labels.
	child := cm(map[string]string{ownership.OwnerAnnotation: "test.steady.dev/Widget/before/app"})
	if changed, err := ownership.SetControllerReference(w, child, s, ownership.RecordOwner{}); !changed || err != nil || !reflect.DeepEqual(child.Labels, recLabels) || len(child.Annotations) != 0 {
		t.Errorf("restored into another namespace: %v, %v, %v, %v", changed, err, child.Labels, child.Annotations)
	}

	// Recorded for another owner, in either form or both: refused, named
	// with the form that refused it; Adopt{} records the owner in labels
	// and removes the other record.
	for _, tc := range []struct {
		name                 string
		labels, ann          map[string]string
		recorded, recordedIn string
	}{
		{"annotation", nil, map[string]string{ownership.OwnerAnnotation: "test.steady.dev/Widget/ns/other"}, "Widget ns/other", "annotation"},
		{"labels", labels("Widget.test.steady.dev", "other"), nil, "Widget other", "labels"},
		{"labels of another kind", labels("Gadget.test.steady.dev", "app"), nil, "Gadget app", "labels"},
		{"labels of another group", labels("Widget", "app"), nil, "Widget (core group) app", "labels"},
		{"a label alone", map[string]string{ownership.OwnerNameLabel: "app"}, nil,
			ownership.OwnerKindLabel + `="" ` + ownership.OwnerNameLabel + `="app"`, "labels"},
		{"ours in labels, another's in the annotation", recLabels, map[string]string{ownership.OwnerAnnotation: "test.steady.dev/Widget/ns/other"}, "Widget ns/other", "annotation"},
		{"ours in the annotation, another's in labels", labels("Widget.test.steady.dev", "other"), rec, "Widget other", "labels"},
		// A cluster-scoped Widget of the name is another owner.
		{"a cluster-scoped owner of the name", nil, map[string]string{ownership.OwnerAnnotation: "test.steady.dev/Widget//app"}, "Widget app", "annotation"},
	} {
		child := cm(tc.ann)
		child.Labels = tc.labels
		before := child.DeepCopy()
		var aoe *ownership.AlreadyOwnedError
		changed, err := ownership.SetControllerReference(w, child, s, ownership.RecordOwner{})
		if changed || !errors.As(err, &aoe) || aoe.Recorded != tc.recorded || aoe.RecordedIn != tc.recordedIn || aoe.Controller != "" || !reflect.DeepEqual(child, before) {
			t.Errorf("%s: %v, %v (%#v); want an *AlreadyOwnedError recording %q in %s", tc.name, changed, err, aoe, tc.recorded, tc.recordedIn)
			continue
		}
		if keys := map[string]string{"labels": ownership.OwnerKindLabel, "annotation": ownership.OwnerAnnotation}[tc.recordedIn]; !strings.Contains(err.Error(), keys) || !strings.Contains(err.Error(), tc.recorded) {
			t.Errorf("%s: message %q does not name %s and %s", tc.name, err, keys, tc.recorded)
		}
		if changed, err := ownership.SetControllerReference(w, child, s, ownership.Adopt{}, ownership.RecordOwner{}); !changed || err != nil ||
			!reflect.DeepEqual(child.Labels, recLabels) || child.Annotations[ownership.OwnerAnnotation] != "" && child.Annotations[ownership.OwnerAnnotation] != rec[ownership.OwnerAnnotation] {
			t.Errorf("%s adopted: %v, %v, labels %v, annotations %v", tc.name, changed, err, child.Labels, child.Annotations)
		}
	}

	// A non-controller reference removed leaves another's record alone.
	for _, other := range []struct{ labels, ann map[string]string }{
		{nil, map[string]string{ownership.OwnerAnnotation: "test.steady.dev/Widget/ns/other"}},
		{labels("Widget.test.steady.dev", "other"), nil},
	} {
		child = cm(other.ann)
		child.Labels = other.labels
		if err := controllerutil.SetOwnerReference(w, child, s); err != nil {
			t.Fatal(err)
		}
		if !ownership.RemoveOwnerReference(w, child) || !reflect.DeepEqual(child.Labels, other.labels) || !reflect.DeepEqual(child.Annotations, other.ann) {
			t.Errorf("a non-controller reference removed: labels %v, annotations %v", child.Labels, child.Annotations)
		}
	}
	// The controller reference removed takes the owner's record in both
	// forms, and leaves another's.
	child = cm(maps.Clone(rec))
	child.Labels = maps.Clone(recLabels)
	if _, err := ownership.SetControllerReference(w, child, s, ownership.RecordOwner{}); err != nil {
		t.Fatal(err)
	}
	if !ownership.RemoveOwnerReference(w, child) || len(child.Labels) != 0 || len(child.Annotations) != 0 {
		t.Errorf("removed, recorded in both forms: labels %v, annotations %v", child.Labels, child.Annotations)
	}
}

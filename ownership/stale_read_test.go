package ownership_test

import (
	"context"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/indexer"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
)

// TestThroughALaggingCache drives both calls through a manager's cached
// client whose watch events arrive 300ms late: a write based on a stale read
// is a conflict to requeue on or keeps the other writer's change, never an
// overwrite.
func TestThroughALaggingCache(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startCached(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")

	for i, fn := range fns {
		t.Run(fn.name, func(t *testing.T) {
			name := []string{"web-u", "web-p"}[i]
			call := func(image string) (controllerutil.OperationResult, error) {
				d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				return fn.fn(ctx, cc.Client, o, d, deployment(d, image))
			}
			if op, err := call("nginx:1"); err != nil || op != controllerutil.OperationResultCreated {
				t.Fatalf("create: %s, %v", op, err)
			}
			// At once again: the cache has not seen the child yet.
			if op, err := call("nginx:1"); err != nil || op != controllerutil.OperationResultNone {
				t.Errorf("right after the create: %s, %v; want unchanged", op, err)
			}
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			cachedSees(t, cc, d)
			cc.Counter.Reset()
			if op, err := call("nginx:1"); err != nil || op != controllerutil.OperationResultNone {
				t.Fatalf("unchanged: %s, %v", op, err)
			}
			if cc.Counter.Writes() != 0 || cc.Counter.Get("GET") != 0 {
				t.Errorf("an unchanged child through the cache: requests %s, want no GET (the cache) and no write", cc.Counter)
			}

			// Another writer labels the child; our read is now stale.
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
				t.Fatal(err)
			}
			d.Labels = map[string]string{"team": "payments"}
			if err := env.Client.Update(ctx, d); err != nil {
				t.Fatal(err)
			}
			op, errs := requeue(t, func() (controllerutil.OperationResult, error) { return call("nginx:2") })
			for _, err := range errs {
				if !apierrors.IsConflict(err) {
					t.Errorf("a stale write failed with %v, want a conflict", err)
				}
			}
			if op != controllerutil.OperationResultUpdated {
				t.Errorf("after requeues: %s", op)
			}
			var got appsv1.Deployment
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(d), &got); err != nil {
				t.Fatal(err)
			}
			if got.Labels["team"] != "payments" || got.Spec.Template.Spec.Containers[0].Image != "nginx:2" {
				t.Errorf("stored: labels %v, image %s; the other writer's label or our change is lost", got.Labels, got.Spec.Template.Spec.Containers[0].Image)
			}
			t.Logf("%s: %d conflict(s) before the write landed", fn.name, len(errs))
		})
	}

	t.Run("another owner's reference added meanwhile survives", func(t *testing.T) {
		b := owner(t, ns, "b")
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan"}, Data: map[string]string{"k": "v"}}
		if err := env.Client.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		cachedSees(t, cc, cm)
		// Another writer adds a (non-controller) reference to b.
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: testapi.GroupVersion.String(), Kind: "Widget", Name: b.Name, UID: b.UID}}
		if err := env.Client.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
		// We adopt it as o's from the stale cache: the update replaces the list.
		_, errs := requeue(t, func() (controllerutil.OperationResult, error) {
			child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan"}}
			return createOrUpdate(ctx, cc.Client, o, child, func() error { child.Data = map[string]string{"k": "w"}; return nil })
		})
		for _, err := range errs {
			if !apierrors.IsConflict(err) {
				t.Errorf("a stale write failed with %v, want a conflict", err)
			}
		}
		var got corev1.ConfigMap
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.OwnerReferences) != 2 || !metav1.IsControlledBy(&got, o) || got.Data["k"] != "w" {
			t.Errorf("stored owners %v, data %v: b's reference or our change is lost", got.OwnerReferences, got.Data)
		}
		t.Logf("%d conflict(s) before the write landed", len(errs))
	})

	t.Run("ListChildren and Find read the cache", func(t *testing.T) {
		p := owner(t, ns, "parent")
		for _, n := range []string{"c1", "c2"} {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}}
			if _, err := createOrUpdate(ctx, env.Client, p, cm, nil); err != nil {
				t.Fatal(err)
			}
		}
		key := indexer.OwnerKey(schema.GroupKind{Group: testapi.GroupVersion.Group, Kind: "Widget"}, "parent")
		deadline := time.Now().Add(10 * time.Second)
		for {
			cc.Counter.Reset()
			var list corev1.ConfigMapList
			if err := ownership.ListChildren(ctx, cc.Client, p, &list); err != nil {
				t.Fatal(err)
			}
			found, err := indexer.ControllerOwner[*corev1.ConfigMap]().Find(ctx, cc.Manager.GetCache(), env.Scheme, key, client.InNamespace(ns))
			if err != nil {
				t.Fatal(err)
			}
			if cc.Counter.Get("LIST") != 0 {
				t.Errorf("ListChildren and Find through the cache: requests %s, want no LIST", cc.Counter)
			}
			var names, foundNames []string
			for _, i := range list.Items {
				names = append(names, i.Name)
			}
			for _, i := range found {
				foundNames = append(foundNames, i.Name)
			}
			sort.Strings(names)
			sort.Strings(foundNames)
			if len(names) == 2 && names[0] == "c1" && len(foundNames) == 2 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("children %v, found %v", names, foundNames)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
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

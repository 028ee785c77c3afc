package ownership_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/ownership"
)

// staleConfigMap is a client whose Get of stale's key answers stale, as a
// cache that has not seen the later writes does, deterministically.
func staleConfigMap(t *testing.T, stale *corev1.ConfigMap) client.Client {
	t.Helper()
	return ours(interceptor.NewClient(watchClient(t), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, into client.Object, opts ...client.GetOption) error {
			if cm, ok := into.(*corev1.ConfigMap); ok && key == client.ObjectKeyFromObject(stale) {
				*cm = *stale.DeepCopy()
				return nil
			}
			return c.Get(ctx, key, into, opts...)
		},
	}))
}

// TestCreateOrPatchStaleReadOfOurOwnWriteIsUnchanged: a reconcile that runs
// again before the cache has seen its own last write (an owner's status
// update requeued it, say) sends the same unlocked patch; the API server
// finds nothing to change and answers the object our last write made. The
// result must be unchanged: nothing of this call landed.
func TestCreateOrPatchStaleReadOfOurOwnWriteIsUnchanged(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "o")
	data := func(cm *corev1.ConfigMap, v string) ownership.MutateFn {
		return func() error { cm.Data = map[string]string{"k": v}; return nil }
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stale-own"}}
	if op, err := ownership.CreateOrPatch(ctx, remembering(), o, cm, data(cm, "v1")); err != nil || op != controllerutil.OperationResultCreated {
		t.Fatalf("create: %s, %v", op, err)
	}
	stale := cm.DeepCopy() // what a lagging cache still shows after the next write
	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stale-own"}}
	if op, err := ownership.CreateOrPatch(ctx, remembering(), o, cm, data(cm, "v2")); err != nil || op != controllerutil.OperationResultUpdated {
		t.Fatalf("our write: %s, %v", op, err)
	}
	written := cm.GetResourceVersion()

	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stale-own"}}
	op, err := ownership.CreateOrPatch(ctx, staleConfigMap(t, stale), o, cm, data(cm, "v2"))
	if err != nil {
		t.Fatal(err)
	}
	var got corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != written {
		t.Fatalf("the server stored something (resourceVersion %s, ours was %s)", got.ResourceVersion, written)
	}
	if op != controllerutil.OperationResultNone {
		t.Errorf("a patch the server stored nothing of reports %s, want unchanged", op)
	}
}

// TestCreateOrPatchStaleReadWhereOurPatchLandsIsUpdated: the other side of
// the case above, another writer's change between the read and the patch
// at a field we do not set; our change lands on top of it and the result
// is updated, the other writer's change kept.
func TestCreateOrPatchStaleReadWhereOurPatchLandsIsUpdated(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "o")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stale-other"}}
	if _, err := ownership.CreateOrPatch(ctx, remembering(), o, cm, func() error { cm.Data = map[string]string{"k": "v1"}; return nil }); err != nil {
		t.Fatal(err)
	}
	stale := cm.DeepCopy()
	other := cm.DeepCopy()
	other.Data["theirs"] = "x"
	if err := env.Client.Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stale-other"}}
	op, err := ownership.CreateOrPatch(ctx, staleConfigMap(t, stale), o, cm, func() error { cm.Data["k"] = "v2"; return nil })
	if err != nil || op != controllerutil.OperationResultUpdated {
		t.Fatalf("%s, %v; want updated", op, err)
	}
	var got corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
		t.Fatal(err)
	}
	if got.Data["k"] != "v2" || got.Data["theirs"] != "x" {
		t.Errorf("stored %v: our change or theirs is lost", got.Data)
	}
}

// TestCreateOrPatchStaleReadWhereAnotherWriterSetOurValueIsUnchanged:
// between our read and our unlocked patch, another writer sets the field
// to the very value we want; the API server stores nothing of our patch,
// yet the answer differs from our read at that field, so the result says
// updated.
func TestCreateOrPatchStaleReadWhereAnotherWriterSetOurValueIsUnchanged(t *testing.T) {
	t.Skip("BUG: an unlocked CreateOrPatch whose field another writer set to our value between the read and the patch " +
		"reports updated though the server stored nothing of ours (controllerutil.CreateOrPatch says updated too). " +
		"Telling it apart needs the object as it was just before the patch: a dry run (the request 8bd8f15 saved) " +
		"or a locked patch (a conflict instead); or document 'updated' as 'the child now holds at a field we set a value it did not hold when read'")
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "o")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stale-same"}}
	if _, err := ownership.CreateOrPatch(ctx, remembering(), o, cm, func() error { cm.Data = map[string]string{"k": "v1"}; return nil }); err != nil {
		t.Fatal(err)
	}
	c := staleAfterGet(t, &corev1.ConfigMap{}, false, func(obj client.Object) { obj.(*corev1.ConfigMap).Data["k"] = "v2" })
	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stale-same"}}
	op, err := ownership.CreateOrPatch(ctx, c, o, cm, func() error { cm.Data["k"] = "v2"; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if op != controllerutil.OperationResultNone {
		t.Errorf("a patch the server stored nothing of reports %s, want unchanged", op)
	}
}

package ownership_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
)

func TestApplyIsIdempotent(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	a, b := owner(t, ns, "a"), owner(t, ns, "b")
	desired := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"k": "v"}}
	}
	for i, want := range []controllerutil.OperationResult{"created", "unchanged", "unchanged"} {
		cm := desired()
		if op, err := applyObject(ctx, c, a, cm, "steady-test"); err != nil || op != want {
			t.Fatalf("apply %d: %s, %v; want %s", i, op, err, want)
		}
		if !metav1.IsControlledBy(cm, a) || cm.Data["k"] != "v" {
			t.Errorf("apply %d: child holds %+v", i, cm)
		}
	}
	n.Reset()
	_, err := applyObject(ctx, c, b, desired(), "steady-test")
	var aoe *ownership.AlreadyOwnedError
	if !errors.As(err, &aoe) || n.Writes() != 0 {
		t.Fatalf("apply by another owner: %v (requests %s)", err, n)
	}
	cm := desired()
	if op, err := applyObject(ctx, c, b, cm, "steady-test", ownership.Adopt{}); err != nil || op != controllerutil.OperationResultUpdated {
		t.Fatalf("adopting apply: %s, %v", op, err)
	}
	if !metav1.IsControlledBy(cm, b) || len(cm.OwnerReferences) != 1 {
		t.Errorf("after adoption: %v", cm.OwnerReferences)
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
	if _, err := applyObject(ctx, remembering(), a, cm, "steady-test"); err != nil {
		t.Fatal(err)
	}
	c := interceptor.NewClient(watchClient(t), interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			return apierrors.NewInternalError(errors.New("etcd is sad"))
		},
	})
	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"k": "w"}}
	op, err := applyObject(ctx, c, b, cm, "steady-test", ownership.Adopt{})
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
	ctx := context.Background()
	ns := env.Namespace(t)
	a := owner(t, ns, "a")
	desired := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"k": "v"}}
	}
	if _, err := applyObject(ctx, remembering(), a, desired(), "steady-test"); err != nil {
		t.Fatal(err)
	}
	c := staleAfterGet(t, &corev1.ConfigMap{}, false, func(obj client.Object) {
		other := obj.(*corev1.ConfigMap)
		other.Labels = map[string]string{"team": "x"}
	})
	if op, err := applyObject(ctx, c, a, desired(), "steady-test"); err != nil || op != controllerutil.OperationResultNone {
		t.Errorf("apply of the same child after another writer's change: %s, %v; want unchanged", op, err)
	}
}

// TestApplyKeepsTheChildsOtherOwnerReferences: the non-controller owner
// references the caller put on the child (controllerutil.SetOwnerReference) are applied
// beside the controller reference, not dropped; a controller reference of
// another owner that the child was read with is not applied back.
func TestApplyKeepsTheChildsOtherOwnerReferences(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	a, b, x := owner(t, ns, "a"), owner(t, ns, "b"), owner(t, ns, "x")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"k": "v"}}
	if err := controllerutil.SetOwnerReference(b, cm, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if _, err := applyObject(ctx, remembering(), a, cm, "steady-test"); err != nil {
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
	if _, err := applyObject(ctx, remembering(), x, &got, "steady-test", ownership.Adopt{}); err != nil {
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

// TestApplyResultThroughALaggingCache: through a manager's cached client
// held 300ms back (typed children, and unstructured ones with a cache that
// serves them), Apply's result says what the API server did, not what its
// read of the cache suggests: an apply right after the create is
// unchanged, not created; one after another writer's change, while the
// cache has not shown the child yet, updated (the call cannot read the
// child: an API reader is not asked for a child the cache does not show,
// which would cost every new child a GET; never unchanged for a change);
// one of a child deleted since the cache saw it, created, not updated.
// Another owner's child the cache has not seen is an *AlreadyOwnedError,
// not the API server's refusal of a second controller, read again through
// the API reader (steady.NewClient's) or the cache (without one).
func TestApplyResultThroughALaggingCache(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	a, b := owner(t, ns, "a"), owner(t, ns, "b")
	typed := func(name, value string) client.Object {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"k": value}}
	}
	unstructuredCM := func(name, value string) client.Object {
		u := unstructuredChild(corev1.SchemeGroupVersion.WithKind("ConfigMap"), ns, name)
		u.Object["data"] = map[string]any{"k": value}
		return u
	}
	seq := 0
	for _, m := range []struct {
		name  string
		start func(*testing.T) *testapi.Cached
		child func(name, value string) client.Object
	}{{"typed", startCached, typed}, {"unstructured", startCachedUnstructured, unstructuredCM}} {
		cc := m.start(t)
		for _, r := range []struct {
			name string
			c    client.Client
		}{{"cache", cc.CacheOnly}, {"APIReader", cc.Client}} {
			seq++
			name := fmt.Sprintf("cfg-%d", seq)
			t.Run(m.name+"/"+r.name, func(t *testing.T) {
				apply := func(value string) (controllerutil.OperationResult, error) {
					cc.Counter.Reset()
					op, err := applyObject(ctx, r.c, a, m.child(name, value), "steady-test")
					t.Logf("apply %s: %s, %v; requests %s", value, op, err, cc.Counter)
					return op, err
				}
				expect := func(step, value string, want controllerutil.OperationResult) {
					t.Helper()
					if op, err := apply(value); err != nil || op != want {
						t.Fatalf("%s: %s, %v; want %s", step, op, err, want)
					}
				}
				expect("create", "v", "created")
				expect("at once again (the cache has not seen it)", "v", "unchanged")
				var cm corev1.ConfigMap
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
					t.Fatal(err)
				}
				metav1.SetMetaDataLabel(&cm.ObjectMeta, "team", "x") // beside the owner record
				if err := env.Client.Update(ctx, &cm); err != nil {
					t.Fatal(err)
				}
				// The cache does not show the child yet: the call knows it
				// only by this client's last answer, whose resourceVersion
				// the label moved past, and has no read to tell our change
				// from the other writer's: updated (it says more than what
				// we did, never less).
				expect("at once after another writer's label", "v", controllerutil.OperationResultUpdated)
				expect("a change", "w", "updated")
				expect("the same again", "w", "unchanged")
				cachedSees(t, cc, &cm)
				if err := env.Client.Delete(ctx, &cm); err != nil {
					t.Fatal(err)
				}
				// (With the same configuration nothing is sent while the cache
				// shows the child as Apply last left it, as for any converged
				// child: the deletion is seen when the cache delivers it.)
				expect("at once after a deletion the cache has not seen", "x", "created")
				var got corev1.ConfigMap
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
					t.Fatal(err)
				}
				if got.Data["k"] != "x" || !metav1.IsControlledBy(&got, a) {
					t.Errorf("stored %v, owners %v", got.Data, got.OwnerReferences)
				}

				// Another owner's child, created a moment ago.
				other := name + "-b"
				if _, err := applyObject(ctx, remembering(), b, typed(other, "b"), "steady-test"); err != nil {
					t.Fatal(err)
				}
				_, err := applyObject(ctx, r.c, a, m.child(other, "a"), "steady-test")
				var aoe *ownership.AlreadyOwnedError
				if !errors.As(err, &aoe) || aoe.Controller != "Widget b" {
					t.Errorf("another owner's child the cache has not seen: %v; want an *AlreadyOwnedError naming Widget b", err)
				}
			})
		}
	}
}

// TestApplyRetriesAreBounded: an apply whose lock keeps failing (the child
// changes under every read) ends in the conflict after at most 3 applies
// (with an API reader) or when the client does not show a newer child; a
// conflict with another field manager is returned at once, not retried.
func TestApplyRetriesAreBounded(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	a := owner(t, ns, "a")
	desired := func(v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"k": v}}
	}
	if _, err := applyObject(ctx, remembering(), a, desired("v"), "steady-test"); err != nil {
		t.Fatal(err)
	}
	for _, withReader := range []bool{true, false} {
		t.Run(fmt.Sprintf("stale lock, APIReader=%v", withReader), func(t *testing.T) {
			applies := 0
			c := interceptor.NewClient(watchClient(t), interceptor.Funcs{
				Apply: func(context.Context, client.WithWatch, runtime.ApplyConfiguration, ...client.ApplyOption) error {
					applies++
					return apierrors.NewConflict(corev1.Resource("configmaps"), "cfg", errors.New("the object has been modified"))
				},
			})
			var ac client.Client = c
			if withReader {
				ac = readingThrough(c, c)
			}
			op, err := applyObject(ctx, ac, a, desired("w"), "steady-test")
			t.Logf("%s, %v after %d applies", op, err, applies)
			if !apierrors.IsConflict(err) || op != "" || applies > 3 {
				t.Errorf("%s, %v after %d applies; want a conflict, no result, at most 3 applies", op, err, applies)
			}
			if !strings.Contains(err.Error(), "ConfigMap "+ns+"/cfg") {
				t.Errorf("the error does not name the child: %v", err)
			}
		})
	}
	t.Run("another field manager's field", func(t *testing.T) {
		c, n := counting(t)
		if err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(func() *unstructured.Unstructured {
			u := unstructuredChild(corev1.SchemeGroupVersion.WithKind("ConfigMap"), ns, "cfg")
			u.Object["data"] = map[string]any{"k": "theirs"}
			return u
		}()), client.FieldOwner("other"), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
		op, err := applyObject(ctx, c, a, desired("ours"), "steady-test")
		if !apierrors.IsConflict(err) || op != "" || n.Get("PATCH") != 1 {
			t.Errorf("%s, %v, requests %s; want the field manager conflict after one apply", op, err, n)
		}
	})
}

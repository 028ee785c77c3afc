package finalizer_test

import (
	"context"
	"os"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/finalizer"
	"github.com/steadyk8s/steady/internal/testapi"
)

var env = testapi.NewEnv()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

const (
	bucketFinalizer = "test.steady.dev/bucket"
	dnsFinalizer    = "test.steady.dev/dns"
	otherFinalizer  = "other.example.com/keep"
)

// external is the state outside the API server that cleanups remove.
type external struct {
	fail  map[string]error
	calls map[string]int
}

func (e *external) finalizer(name string) finalizer.Func {
	return finalizer.Func(func(ctx context.Context, obj client.Object) error {
		e.calls[name]++
		return e.fail[name]
	})
}

func setup(t *testing.T) (*finalizer.Handler, *external, *testapi.Counter, client.Client, string) {
	t.Helper()
	c, n, err := testapi.NewCountingClient(env.Config, env.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	ext := &external{fail: map[string]error{}, calls: map[string]int{}}
	h := finalizer.NewHandler(c)
	for _, name := range []string{bucketFinalizer, dnsFinalizer} {
		if err := h.Register(name, ext.finalizer(name)); err != nil {
			t.Fatal(err)
		}
	}
	return h, ext, n, c, env.Namespace(t)
}

func create(t *testing.T, c client.Client, ns string, finalizers ...string) *testapi.Widget {
	t.Helper()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w", Finalizers: finalizers}}
	if err := c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

func stored(t *testing.T, c client.Client, w *testapi.Widget) (*testapi.Widget, bool) {
	t.Helper()
	var got testapi.Widget
	err := c.Get(context.Background(), client.ObjectKeyFromObject(w), &got)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return &got, true
}

func TestFinalizersArePersistedBeforeHandleReturns(t *testing.T) {
	env.Require(t)
	h, _, n, c, ns := setup(t)
	w := create(t, c, ns)
	n.Reset()
	res, err := h.Handle(context.Background(), w)
	if err != nil || !res.Updated || res.Deleting {
		t.Fatalf("Handle = %+v, %v", res, err)
	}
	if n.Get("PATCH") != 1 || n.Writes() != 1 {
		t.Errorf("requests: %s, want one PATCH", n)
	}
	got, _ := stored(t, c, w)
	if !slices.Equal(got.Finalizers, []string{bucketFinalizer, dnsFinalizer}) {
		t.Errorf("stored finalizers = %v", got.Finalizers)
	}
	n.Reset()
	if res, err := h.Handle(context.Background(), w); err != nil || res.Updated {
		t.Errorf("second Handle = %+v, %v", res, err)
	}
	if n.Writes() != 0 {
		t.Errorf("second Handle made requests: %s", n)
	}
}

func TestAddingToADeletingObjectIsRefusedWithoutAPICall(t *testing.T) {
	env.Require(t)
	h, ext, n, c, ns := setup(t)
	ctx := context.Background()
	w := create(t, c, ns, otherFinalizer)
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	w, _ = stored(t, c, w)
	n.Reset()

	res, err := h.Handle(ctx, w)
	if err != nil || !res.Deleting || res.Updated {
		t.Fatalf("Handle = %+v, %v", res, err)
	}
	if n.Writes() != 0 || len(ext.calls) != 0 {
		t.Errorf("requests %s, cleanups %v; want none", n, ext.calls)
	}
	if !slices.Equal(w.Finalizers, []string{otherFinalizer}) {
		t.Errorf("in-memory finalizers = %v", w.Finalizers)
	}
}

// TestAnotherControllersFinalizerSurvives has another writer change the
// finalizer list between our read and our write: adding its own while we
// add ours, and removing its own while we remove ours. Nothing of theirs is
// dropped, and nothing they removed comes back.
func TestAnotherControllersFinalizerSurvives(t *testing.T) {
	env.Require(t)
	h, _, n, c, ns := setup(t)
	ctx := context.Background()
	w := create(t, c, ns, "third.example.com/late")
	stale := w.DeepCopy()
	other := w.DeepCopy()
	other.Finalizers = []string{"third.example.com/late", otherFinalizer}
	if err := env.Client.Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	n.Reset()
	if _, err := h.Handle(ctx, stale); err != nil {
		t.Fatal(err)
	}
	if n.Get("PATCH") != 2 || n.Get("GET") != 1 {
		t.Errorf("requests %s, want a conflicting PATCH, a GET and a PATCH", n)
	}
	got, _ := stored(t, c, w)
	if !slices.Equal(got.Finalizers, []string{"third.example.com/late", otherFinalizer, bucketFinalizer, dnsFinalizer}) {
		t.Fatalf("stored finalizers after add = %v", got.Finalizers)
	}

	if err := c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	stale, _ = stored(t, c, w)
	other = stale.DeepCopy()
	other.Finalizers = slices.DeleteFunc(other.Finalizers, func(f string) bool { return f == "third.example.com/late" })
	if err := env.Client.Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Handle(ctx, stale); err != nil {
		t.Fatal(err)
	}
	got, ok := stored(t, c, w)
	if !ok || !slices.Equal(got.Finalizers, []string{otherFinalizer}) {
		t.Fatalf("stored finalizers after removal = %v (exists %v)", got.Finalizers, ok)
	}
}

func TestRegister(t *testing.T) {
	env.Require(t)
	h := finalizer.NewHandler(env.Client)
	noop := finalizer.Func(func(context.Context, client.Object) error { return nil })
	if err := h.Register("Not A Name!", noop); err == nil {
		t.Error("an invalid name was accepted")
	}
	if err := h.Register(bucketFinalizer, noop); err != nil {
		t.Fatal(err)
	}
	if err := h.Register(bucketFinalizer, noop); err == nil {
		t.Error("a duplicate name was accepted")
	}
	if err := h.Register(dnsFinalizer, nil); err == nil {
		t.Error("a nil Finalizer was accepted")
	}
}

// Adding finalizers to an unstructured object (whose finalizers live in its
// metadata map) and to a typed one that already has some (a slice with room
// to append into) writes them: the snapshot Handle diffs against keeps the
// finalizers as read, the other writer's included.
func TestFinalizersAreAddedToEveryShape(t *testing.T) {
	env.Require(t)
	h, _, n, c, ns := setup(t)
	want := []string{otherFinalizer, bucketFinalizer, dnsFinalizer}
	t.Run("typed", func(t *testing.T) {
		w := create(t, c, ns, otherFinalizer)
		w.Finalizers = slices.Grow(w.Finalizers, 4)
		n.Reset()
		if res, err := h.Handle(context.Background(), w); err != nil || !res.Updated {
			t.Fatalf("Handle = %+v, %v", res, err)
		}
		if got, _ := stored(t, c, w); !slices.Equal(got.Finalizers, want) || n.Get("PATCH") != 1 {
			t.Errorf("stored finalizers = %v, requests %s", got.Finalizers, n)
		}
		if err := c.Delete(context.Background(), w); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("unstructured", func(t *testing.T) {
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "u", Finalizers: []string{otherFinalizer}}}
		if err := c.Create(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(testapi.GroupVersion.WithKind("Widget"))
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(w), u); err != nil {
			t.Fatal(err)
		}
		n.Reset()
		if res, err := h.Handle(context.Background(), u); err != nil || !res.Updated {
			t.Fatalf("Handle = %+v, %v", res, err)
		}
		if got, _ := stored(t, c, w); !slices.Equal(got.Finalizers, want) || n.Get("PATCH") != 1 {
			t.Errorf("stored finalizers = %v, requests %s", got.Finalizers, n)
		}
		if !slices.Equal(u.GetFinalizers(), want) {
			t.Errorf("the object's finalizers = %v, want the answer's %v", u.GetFinalizers(), want)
		}
	})
}

package finalizer_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/finalizer"
	"github.com/steadyk8s/steady/internal/testapi"
)

func TestCleanupFailureKeepsTheFinalizer(t *testing.T) {
	env.Require(t)
	h, ext, _, c, ns := setup(t)
	ctx := context.Background()
	w := create(t, c, ns, bucketFinalizer, dnsFinalizer)
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	w, _ = stored(t, c, w)

	ext.fail[bucketFinalizer] = errors.New("bucket not empty")
	res, err := h.Handle(ctx, w)
	var ce *finalizer.CleanupError
	if !errors.As(err, &ce) || ce.Finalizer != bucketFinalizer || ce.Object != "Widget "+ns+"/w" {
		t.Fatalf("Handle error = %v, want a CleanupError for %s", err, bucketFinalizer)
	}
	if !res.Deleting || !res.Updated {
		t.Errorf("Handle = %+v", res)
	}
	got, ok := stored(t, c, w)
	if !ok || !slices.Equal(got.Finalizers, []string{bucketFinalizer}) {
		t.Fatalf("after a failed cleanup the stored finalizers are %v (exists %v), want only %s", got.Finalizers, ok, bucketFinalizer)
	}

	delete(ext.fail, bucketFinalizer)
	if res, err := h.Handle(ctx, got); err != nil || !res.Deleting {
		t.Fatalf("Handle = %+v, %v", res, err)
	}
	if _, ok := stored(t, c, w); ok {
		t.Error("object still exists after its last finalizer was removed")
	}
	if ext.calls[dnsFinalizer] != 1 || ext.calls[bucketFinalizer] != 2 {
		t.Errorf("cleanup calls = %v", ext.calls)
	}
}

// API: a cleanup that reports progress on the object has its change
// written, when in progress, when failing and when done; another writer's
// condition added meanwhile survives.
func TestCleanupChangesAreWritten(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n, _ := testapi.NewCountingClient(env.Config, env.Scheme)
	step := 0
	var stepErr error
	h := finalizer.NewHandler(c)
	_ = h.Register(bucketFinalizer, finalizer.Func(func(ctx context.Context, obj client.Object) error {
		w := obj.(*testapi.Widget)
		step++
		w.Status.Phase = "Deleting"
		conditions.MarkFalse(w, "Ready", "Deleting", "deleting %d of 3 objects", step)
		if step < 3 {
			if stepErr != nil {
				return stepErr
			}
			return finalizer.InProgress(2*time.Second, "%d of 3", step)
		}
		return nil
	}))
	w := create(t, c, env.Namespace(t), bucketFinalizer)
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	w, _ = stored(t, c, w)

	// Step 1: in progress.
	stale := w.DeepCopy()
	other := w.DeepCopy()
	conditions.MarkTrue(other, "Theirs", "Set", "")
	if err := env.Client.Status().Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	n.Reset()
	res, err := h.Handle(ctx, stale)
	if err != nil || !res.Deleting || res.RequeueAfter != 2*time.Second {
		t.Fatalf("Handle = %+v, %v", res, err)
	}
	got, _ := stored(t, c, w)
	if c := conditions.Get(got, "Ready"); c == nil || c.Message != "deleting 1 of 3 objects" || got.Status.Phase != "Deleting" ||
		!conditions.IsTrue(got, "Theirs") || !controllerutil.ContainsFinalizer(got, bucketFinalizer) {
		t.Fatalf("after step 1: %+v", got)
	}
	t.Logf("in progress: %s", n)

	// Step 2: failing.
	stepErr = errors.New("api down")
	res, err = h.Handle(ctx, got)
	var ce *finalizer.CleanupError
	if !errors.As(err, &ce) {
		t.Fatalf("Handle = %+v, %v", res, err)
	}
	got, _ = stored(t, c, w)
	if c := conditions.Get(got, "Ready"); c == nil || c.Message != "deleting 2 of 3 objects" || !controllerutil.ContainsFinalizer(got, bucketFinalizer) {
		t.Fatalf("after step 2: %+v", got)
	}

	// Step 3: done, the object goes.
	stepErr = nil
	if res, err = h.Handle(ctx, got); err != nil || !res.Deleting {
		t.Fatalf("Handle = %+v, %v", res, err)
	}
	if _, ok := stored(t, c, w); ok {
		t.Error("object still there")
	}
}

// A cleanup in progress without a time (InProgress(0, ...), "the caller's
// default") must still come back: the documented caller pattern returns
// ctrl.Result{RequeueAfter: res.RequeueAfter} and no error, which with a
// zero RequeueAfter is never requeued, and the object keeps its finalizer
// until some unrelated event.
func TestInProgressWithoutATimeIsRequeued(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		times []time.Duration
		want  time.Duration
	}{
		{"zero", []time.Duration{0}, finalizer.DefaultInProgressRequeue},
		{"zero and a shorter one", []time.Duration{0, time.Second}, time.Second},
		{"a longer one and zero", []time.Duration{time.Hour, 0}, finalizer.DefaultInProgressRequeue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := finalizer.NewHandler(env.Client)
			var names []string
			for i, d := range tc.times {
				name := []string{bucketFinalizer, dnsFinalizer}[i]
				names = append(names, name)
				_ = h.Register(name, finalizer.Func(func(context.Context, client.Object) error {
					return finalizer.InProgress(d, "waiting")
				}))
			}
			w := create(t, env.Client, env.Namespace(t), names...)
			if err := env.Client.Delete(ctx, w); err != nil {
				t.Fatal(err)
			}
			got, _ := stored(t, env.Client, w)
			res, err := h.Handle(ctx, got)
			if err != nil || !res.Deleting || res.RequeueAfter != tc.want {
				t.Errorf("Handle = %+v, %v; want RequeueAfter %s", res, err, tc.want)
			}
			got, _ = stored(t, env.Client, w)
			for _, n := range names {
				if !controllerutil.ContainsFinalizer(got, n) {
					t.Errorf("finalizer %s removed while its cleanup is in progress", n)
				}
			}
			got.Finalizers = nil
			_ = env.Client.Update(ctx, got)
		})
	}
}

// finalizer.When: an object no longer selected has the cleanup run and the
// finalizer removed once it succeeded; a failed cleanup keeps it and says
// so; Deleting stays false, so the caller reconciles on.
func TestWhenReleasesWhatItNoLongerSelects(t *testing.T) {
	env.Require(t)
	c, _, err := testapi.NewCountingClient(env.Config, env.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ext := &external{fail: map[string]error{}, calls: map[string]int{}}
	h := finalizer.NewHandler(c)
	blue := finalizer.When(func(o client.Object) bool { return o.(*testapi.Widget).Spec.Color == "blue" })
	if err := h.Register(bucketFinalizer, ext.finalizer(bucketFinalizer), blue); err != nil {
		t.Fatal(err)
	}
	w := create(t, c, env.Namespace(t), bucketFinalizer, otherFinalizer) // red, carrying ours
	ext.fail[bucketFinalizer] = errors.New("the API is down")
	res, err := h.Handle(ctx, w)
	var ce *finalizer.CleanupError
	if !errors.As(err, &ce) || res.Deleting {
		t.Fatalf("failed release: %+v, %v", res, err)
	}
	if got, _ := stored(t, c, w); !slices.Contains(got.Finalizers, bucketFinalizer) {
		t.Fatalf("finalizer removed though its cleanup failed: %v", got.Finalizers)
	}
	delete(ext.fail, bucketFinalizer)
	w, _ = stored(t, c, w)
	res, err = h.Handle(ctx, w)
	if err != nil || res.Deleting || !res.Updated {
		t.Fatalf("release: %+v, %v", res, err)
	}
	if got, _ := stored(t, c, w); !slices.Equal(got.Finalizers, []string{otherFinalizer}) || ext.calls[bucketFinalizer] != 2 {
		t.Errorf("finalizers %v, cleanups %v", got.Finalizers, ext.calls)
	}
}

// Several When given to Register select the objects all of them select
// (before they were one option each, and the last one given won).
func TestSeveralWhensAllSelect(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	labeled := func(k string) finalizer.When {
		return func(o client.Object) bool { return o.GetLabels()[k] == "y" }
	}
	for _, tc := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{"a": "y"}, false},
		{map[string]string{"b": "y"}, false},
		{map[string]string{"a": "y", "b": "y"}, true},
	} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", Labels: tc.labels}}
		c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cm).Build()
		h := finalizer.NewHandler(c)
		noop := finalizer.Func(func(context.Context, client.Object) error { return nil })
		if err := h.Register(bucketFinalizer, noop, labeled("a"), labeled("b")); err != nil {
			t.Fatal(err)
		}
		got := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Handle(ctx, got); err != nil {
			t.Fatal(err)
		}
		if on := controllerutil.ContainsFinalizer(got, bucketFinalizer); on != tc.want {
			t.Errorf("labels %v: finalizer added %v, want %v", tc.labels, on, tc.want)
		}
	}
}

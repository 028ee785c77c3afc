package cachewait_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadyk8s/steady/cachewait"
	"github.com/steadyk8s/steady/internal/testapi"
)

// TestConcurrentWritersReadTheirWrites: two goroutines patch one object
// through one Client; the one whose write is newer must read it back even
// when the older write's call returns last (the bug: the older write's
// expectation replaced the newer one, and the Get returned the older
// object).
func TestConcurrentWritersReadTheirWrites(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	noTimeouts(t)
	ns := env.Namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}}
	must(t, env.Client.Create(ctx, cm))
	must(t, cachewait.ForWrite(ctx, cc.Client, cm))

	written := make(chan struct{})
	slow := interceptor.NewClient(withWatch{cc.Client}, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			err := c.Patch(ctx, obj, patch, opts...)
			if obj.GetLabels()["writer"] == "slow" {
				close(written)
				time.Sleep(200 * time.Millisecond) // the answer is slow to come back
			}
			return err
		},
	})
	c := cachewait.NewClient(clusterOf(slow, cc.APIReader), cachewait.WithTimeout(3*time.Second))
	patch := func(writer string) {
		p := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared", Labels: map[string]string{"writer": writer}}}
		must(t, c.Patch(ctx, p, client.Merge))
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); patch("slow") }()
	<-written
	time.Sleep(100 * time.Millisecond)
	patch("fast")
	wg.Wait() // the slow writer has recorded its older write
	var got corev1.ConfigMap
	must(t, c.Get(ctx, client.ObjectKeyFromObject(cm), &got))
	if got.Labels["writer"] != "fast" {
		t.Errorf("Get after the newer write shows writer=%q, want fast", got.Labels["writer"])
	}
}

// TestManyWritersReadTheirWrites: goroutines patch their own key of one
// ConfigMap through one Client and read it back; each must see its write.
func TestManyWritersReadTheirWrites(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	noTimeouts(t)
	c := cachewait.NewClient(cc.Manager, cachewait.WithTimeout(5*time.Second))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "many"}}
	must(t, c.Create(ctx, cm))
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for round := range 3 {
				key, val := fmt.Sprintf("w%d", w), fmt.Sprintf("r%d", round)
				p := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cm.Namespace, Name: cm.Name}, Data: map[string]string{key: val}}
				if err := c.Patch(ctx, p, client.Merge); err != nil {
					t.Error(err)
					return
				}
				var got corev1.ConfigMap
				if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
					t.Error(err)
					return
				}
				if got.Data[key] != val {
					t.Errorf("writer %d round %d reads %s=%q, want %q", w, round, key, got.Data[key], val)
				}
			}
		})
	}
	wg.Wait()
}

// TestReadInAnotherRepresentation: a write made unstructured, or
// metadata-only, then read typed (the manager caches the typed kind) must
// show the write; the wait must not start an informer of the write's
// representation (the bug: the wait read an unstructured / metadata
// informer it started, which listed the write at once, and the typed Get
// then returned the old object; two requests more).
func TestReadInAnotherRepresentation(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	noTimeouts(t)
	ns := env.Namespace(t)
	c := cachewait.NewClient(cc.Manager, cachewait.WithTimeout(3*time.Second))
	for _, tc := range []struct {
		name  string
		write func(cm *corev1.ConfigMap) client.Object
	}{
		{"unstructured", func(cm *corev1.ConfigMap) client.Object {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("v1")
			u.SetKind("ConfigMap")
			u.SetNamespace(cm.Namespace)
			u.SetName(cm.Name)
			u.SetLabels(map[string]string{"written": "yes"})
			return u
		}},
		{"metadata", func(cm *corev1.ConfigMap) client.Object {
			m := &metav1.PartialObjectMetadata{}
			m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
			m.SetNamespace(cm.Namespace)
			m.SetName(cm.Name)
			m.SetLabels(map[string]string{"written": "yes"})
			return m
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tc.name}}
			must(t, env.Client.Create(ctx, cm))
			must(t, cachewait.ForWrite(ctx, cc.Client, cm))
			cc.Counter.Reset()
			must(t, c.Patch(ctx, tc.write(cm), client.Merge))
			var got corev1.ConfigMap
			must(t, c.Get(ctx, client.ObjectKeyFromObject(cm), &got))
			if got.Labels["written"] != "yes" {
				t.Errorf("typed Get after the %s patch: labels %v, want the patch", tc.name, got.Labels)
			}
			if n := cc.Counter.Get("LIST") + cc.Counter.Get("WATCH"); n != 0 {
				t.Errorf("%d LISTs and WATCHes, want none: %s", n, cc.Counter)
			}
		})
	}
}

// TestSubResourceWritesAreSeen: writes through c.SubResource("status") (the
// same as c.Status()) and c.SubResource("scale") are read back like the
// others (the bug: SubResource was not wrapped, so they were not
// remembered and the Get returned the old object).
func TestSubResourceWritesAreSeen(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: lag,
		Informers: []client.Object{&testapi.Widget{}, &appsv1.Deployment{}}})
	noTimeouts(t)
	ns := env.Namespace(t)
	c := cachewait.NewClient(cc.Manager, cachewait.WithTimeout(3*time.Second))

	t.Run("status", func(t *testing.T) {
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "status"}}
		must(t, c.Create(ctx, w))
		w.Status.Phase = "Ready"
		must(t, c.SubResource("status").Update(ctx, w))
		var got testapi.Widget
		must(t, c.Get(ctx, client.ObjectKeyFromObject(w), &got))
		if got.Status.Phase != "Ready" {
			t.Errorf("Get after the status update: phase %q, want Ready", got.Status.Phase)
		}
		base := got.DeepCopy()
		got.Status.Phase = "Done"
		must(t, c.SubResource("status").Patch(ctx, &got, client.MergeFrom(base)))
		must(t, c.Get(ctx, client.ObjectKeyFromObject(w), &got))
		if got.Status.Phase != "Done" {
			t.Errorf("Get after the status patch: phase %q, want Done", got.Status.Phase)
		}
	})

	t.Run("scale", func(t *testing.T) {
		labels := map[string]string{"app": "scale"}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scale"},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
		must(t, c.Create(ctx, d))
		must(t, c.Get(ctx, client.ObjectKeyFromObject(d), &appsv1.Deployment{}))
		scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 5}}
		must(t, c.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(scale)))
		var got appsv1.Deployment
		must(t, c.Get(ctx, client.ObjectKeyFromObject(d), &got))
		if got.Spec.Replicas == nil || *got.Spec.Replicas != 5 {
			t.Errorf("Get after the scale update: replicas %v, want 5", got.Spec.Replicas)
		}
	})
}

// TestApplyAndDeleteAllOfAreSeen: Apply, status Apply and DeleteAllOf
// through the Client are waited for like the other writes.
func TestApplyAndDeleteAllOfAreSeen(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	noTimeouts(t)
	c := cachewait.NewClient(cc.Manager, cachewait.WithTimeout(3*time.Second))
	owner := client.FieldOwner("cachewait-test")

	t.Run("Apply", func(t *testing.T) {
		ns := env.Namespace(t)
		key := client.ObjectKey{Namespace: ns, Name: "applied"}
		must(t, c.Apply(ctx, corev1ac.ConfigMap(key.Name, ns).WithData(map[string]string{"k": "v"}), owner, client.ForceOwnership))
		if err := cc.Manager.GetClient().Get(ctx, key, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the manager's Get right after Apply: %v; the cache did not lag, the test proves nothing", err)
		}
		var got corev1.ConfigMap
		must(t, c.Get(ctx, key, &got))
		if got.Data["k"] != "v" {
			t.Errorf("Get after Apply: %+v", got)
		}
	})

	t.Run("status Apply", func(t *testing.T) {
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
		must(t, env.Client.Create(ctx, w))
		must(t, cachewait.ForWrite(ctx, cc.Client, w))
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(testapi.GroupVersion.WithKind("Widget"))
		u.SetNamespace(w.Namespace)
		u.SetName(w.Name)
		must(t, unstructured.SetNestedField(u.Object, "Applied", "status", "phase"))
		must(t, c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), owner, client.ForceOwnership))
		var got testapi.Widget
		must(t, cc.Manager.GetClient().Get(ctx, client.ObjectKeyFromObject(w), &got))
		if got.Status.Phase == "Applied" {
			t.Fatal("the cache held the status Apply at once; the test proves nothing")
		}
		must(t, c.Get(ctx, client.ObjectKeyFromObject(w), &got))
		if got.Status.Phase != "Applied" {
			t.Errorf("Get after status Apply: phase %q", got.Status.Phase)
		}
	})

	t.Run("DeleteAllOf", func(t *testing.T) {
		ns := env.Namespace(t)
		batch := client.MatchingLabels{"batch": "x"}
		for i := 0; i < 3; i++ {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("b-", i), Labels: batch}}
			must(t, env.Client.Create(ctx, cm))
			must(t, cachewait.ForWrite(ctx, cc.Client, cm))
		}
		must(t, c.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns), batch))
		var list corev1.ConfigMapList
		must(t, cc.Manager.GetClient().List(ctx, &list, client.InNamespace(ns), batch))
		if len(list.Items) == 0 {
			t.Fatal("the cache held the DeleteAllOf at once; the test proves nothing")
		}
		must(t, c.List(ctx, &list, client.InNamespace(ns), batch))
		if len(list.Items) != 0 {
			t.Errorf("List after DeleteAllOf: %d objects", len(list.Items))
		}
		// What the Client creates afterwards is not waited away.
		again := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b-again", Labels: batch}}
		must(t, c.Create(ctx, again))
		must(t, c.List(ctx, &list, client.InNamespace(ns), batch))
		if len(list.Items) != 1 {
			t.Errorf("List after the create that followed DeleteAllOf: %d objects, want 1", len(list.Items))
		}
	})
}

// TestDryRunIsNotRecorded: a dry-run write changes nothing, so no read
// waits for it.
func TestDryRunIsNotRecorded(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	c := cachewait.NewClient(cc.Manager, cachewait.WithTimeout(time.Second))
	ns := env.Namespace(t)
	kept := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept"}}
	must(t, env.Client.Create(ctx, kept))
	must(t, cachewait.ForWrite(ctx, cc.Client, kept))
	waits := waitCount(t, "")
	dry := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dry"}}
	must(t, c.Create(ctx, dry, client.DryRunAll))
	patched := kept.DeepCopy()
	patched.Data = map[string]string{"k": "v"}
	must(t, c.Patch(ctx, patched, client.MergeFrom(kept), client.DryRunAll))
	must(t, c.Delete(ctx, kept.DeepCopy(), client.DryRunAll))
	if err := c.Get(ctx, client.ObjectKeyFromObject(dry), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("Get of the dry-run create: %v, want NotFound", err)
	}
	var got corev1.ConfigMap
	must(t, c.Get(ctx, client.ObjectKeyFromObject(kept), &got))
	if got.Data != nil || got.DeletionTimestamp != nil {
		t.Errorf("dry runs changed what the cache shows: %+v", got)
	}
	must(t, c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns)))
	if n := waitCount(t, "") - waits; n != 0 {
		t.Errorf("%d waits after dry runs, want none", n)
	}
}

// TestCallerContextEndingKeepsTheWrite: a read whose own context ends
// before the cache caught up gets the error, but the write is not
// forgotten: the next read still waits for it (the bug: it was dropped as
// if it had timed out, and the next Get returned NotFound for the object
// just created).
func TestCallerContextEndingKeepsTheWrite(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	c := cachewait.NewClient(cc.Manager, cachewait.WithTimeout(3*time.Second))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "impatient"}}
	must(t, c.Create(ctx, cm))
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := c.Get(short, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !errors.As(err, new(*cachewait.TimeoutError)) {
		t.Fatalf("Get with a 20ms context: %v, want a TimeoutError", err)
	}
	must(t, c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}))
}

// TestFaults: a write that fails is not waited for; a cache read that fails
// during a wait is returned, naming the object.
func TestFaults(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)

	t.Run("a failed write is not recorded", func(t *testing.T) {
		ns := env.Namespace(t)
		failing := interceptor.NewClient(withWatch{cc.Client}, interceptor.Funcs{
			Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
				return apierrors.NewInternalError(errors.New("injected"))
			},
			Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, _ client.Patch, _ ...client.PatchOption) error {
				return apierrors.NewConflict(corev1.Resource("configmaps"), obj.GetName(), errors.New("injected"))
			},
		})
		c := cachewait.NewClient(clusterOf(failing, cc.APIReader), cachewait.WithTimeout(time.Second))
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "never", ResourceVersion: ""}}
		waits := waitCount(t, "")
		if err := c.Create(ctx, cm); !apierrors.IsInternalError(err) {
			t.Fatalf("Create: %v", err)
		}
		cm.ResourceVersion = "1"
		if err := c.Patch(ctx, cm, client.MergeFrom(cm.DeepCopy())); !apierrors.IsConflict(err) {
			t.Fatalf("Patch: %v", err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("Get: %v, want NotFound", err)
		}
		if n := waitCount(t, "") - waits; n != 0 {
			t.Errorf("%d waits after failed writes, want none", n)
		}
	})

	t.Run("a cache read that fails during a wait", func(t *testing.T) {
		ns := env.Namespace(t)
		var fail atomic.Bool
		flaky := interceptor.NewClient(withWatch{cc.Client}, interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if fail.Load() {
					return apierrors.NewInternalError(errors.New("injected"))
				}
				return c.Get(ctx, key, obj, opts...)
			},
		})
		c := cachewait.NewClient(clusterOf(flaky, cc.APIReader), cachewait.WithTimeout(3*time.Second))
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flaky"}}
		must(t, c.Create(ctx, cm))
		fail.Store(true)
		for name, read := range map[string]func() error{
			"Client.Get": func() error { return c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}) },
			"ForWrite":   func() error { return cachewait.ForWrite(ctx, flaky, cm) },
		} {
			err := read()
			if !apierrors.IsInternalError(err) || errors.As(err, new(*cachewait.TimeoutError)) || !strings.Contains(err.Error(), "ConfigMap "+ns+"/flaky") {
				t.Errorf("%s while the cache fails: %v; want the 500, naming ConfigMap %s/flaky", name, err, ns)
			}
		}
		// The expectation is kept: once the cache reads again, Get waits
		// for the create.
		fail.Store(false)
		must(t, c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}))
	})
}

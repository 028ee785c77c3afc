package cachewait_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadyk8s/steady/cachewait"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/testenv"
)

// TestWriteToTerminatingPodIsSeen: a Pod being deleted gracefully is marked
// for deletion with no finalizer, yet it stays (until its kubelet confirms):
// a write to it is not a release, and a read after it must not wait for the
// Pod to go (the bug: it waited the full timeout).
func TestWriteToTerminatingPodIsSeen(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: lag, Informers: []client.Object{&corev1.Pod{}}})
	noTimeouts(t)
	ns := env.Namespace(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "terminating"},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	must(t, env.Client.Create(ctx, pod))
	must(t, cachewait.ForWrite(ctx, cc.Client, pod))
	must(t, env.Client.Delete(ctx, pod))
	must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod))
	if pod.DeletionTimestamp == nil || len(pod.Finalizers) != 0 {
		t.Fatalf("want a Pod marked for deletion without finalizers: %+v", pod.ObjectMeta)
	}
	must(t, cachewait.ForWrite(ctx, cc.Client, pod, cachewait.WithTimeout(3*time.Second)))
	var marked corev1.Pod
	must(t, cc.Client.Get(ctx, client.ObjectKeyFromObject(pod), &marked))
	if marked.DeletionTimestamp == nil {
		t.Fatal("ForWrite of the deletion mark returned before the cache held it")
	}

	c := cachewait.NewClient(cc.Client, cachewait.WithTimeout(3*time.Second))
	base := pod.DeepCopy()
	pod.Labels = map[string]string{"seen": "yes"}
	must(t, c.Patch(ctx, pod, client.MergeFrom(base)))
	var got corev1.Pod
	must(t, c.Get(ctx, client.ObjectKeyFromObject(pod), &got))
	if got.Labels["seen"] != "yes" {
		t.Errorf("Get after the patch: labels %v, want the patch", got.Labels)
	}

	base = pod.DeepCopy()
	pod.Labels["seen"] = "again"
	must(t, env.Client.Patch(ctx, pod, client.MergeFrom(base)))
	must(t, cachewait.ForWrite(ctx, cc.Client, pod, cachewait.WithTimeout(3*time.Second)))

	tr := cachewait.NewTracker(cc.Client)
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner", UID: "owner-uid"}}
	tr.Wrote(owner, pod)
	caughtUp(t, tr, owner)
}

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
	c := cachewait.NewClient(slow, cachewait.WithTimeout(3*time.Second))
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

// TestDeleteByNameOfTerminatingObject: an object deleted by name only (no
// UID), held by another finalizer, is Terminating: reads after the Delete
// must not wait for it to go, through a Client or a Tracker.
func TestDeleteByNameOfTerminatingObject(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	noTimeouts(t)
	ns := env.Namespace(t)
	held := func(name string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: []string{hold}}}
		must(t, env.Client.Create(ctx, cm))
		t.Cleanup(func() { release(t, env.Client, cm.DeepCopy()) })
		must(t, cachewait.ForWrite(ctx, cc.Client, cm))
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}

	c := cachewait.NewClient(cc.Client, cachewait.WithTimeout(3*time.Second))
	must(t, c.Delete(ctx, held("client")))
	var list corev1.ConfigMapList
	must(t, c.List(ctx, &list, client.InNamespace(ns)))
	for _, cm := range list.Items {
		if cm.Name == "client" && cm.DeletionTimestamp == nil {
			t.Error("List after the Delete shows it unmarked")
		}
	}

	tr := cachewait.NewTracker(cc.Client)
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner", UID: "owner-uid"}}
	child := held("tracked")
	must(t, env.Client.Delete(ctx, child))
	tr.Deleted(owner, child)
	caughtUp(t, tr, owner)
}

// TestWriteOutsideTheCachedNamespaces: with a cache limited to some
// namespaces, a write through the Client in another one (writes go to the
// API server) must not make every later cluster-wide List fail (the bug:
// the wait read the cache for that object, which errs, and kept the
// expectation, so each List returned the error).
func TestWriteOutsideTheCachedNamespaces(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cached, other := env.Namespace(t), env.Namespace(t)
	mgr := env.StartManager(t, testenv.WithManagerOptions(ctrl.Options{Cache: cache.Options{
		DefaultNamespaces: map[string]cache.Config{cached: {}}}}),
		testenv.WithInformers{&corev1.ConfigMap{}})
	c := cachewait.NewClient(mgr.GetClient(), cachewait.WithTimeout(3*time.Second))
	must(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "elsewhere"}}))
	in := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cached, Name: "here"}}
	must(t, c.Create(ctx, in))
	for i := range 2 {
		var list corev1.ConfigMapList
		if err := c.List(ctx, &list); err != nil {
			t.Fatalf("cluster-wide List %d: %v", i, err)
		}
		found := false
		for _, cm := range list.Items {
			found = found || cm.Name == "here"
		}
		if !found {
			t.Errorf("List %d lacks the object written in the cached namespace", i)
		}
	}
}

// caughtUp asks tr until it has caught up for owner, and fails t when that
// takes 60 requeues (the TTL is a minute; 60 default requeues are 3s).
func caughtUp(t testing.TB, tr *cachewait.Tracker, owner client.Object) {
	t.Helper()
	for i := 0; ; i++ {
		after, err := tr.CaughtUp(context.Background(), owner)
		must(t, err)
		if after == 0 {
			return
		}
		if i == 60 {
			t.Fatal("the Tracker stalls the owner")
		}
		time.Sleep(after)
	}
}

// TestManyWritersReadTheirWrites: goroutines patch their own key of one
// ConfigMap through one Client and read it back; each must see its write.
func TestManyWritersReadTheirWrites(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	noTimeouts(t)
	c := cachewait.NewClient(cc.Client, cachewait.WithTimeout(5*time.Second))
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
	c := cachewait.NewClient(cc.Client, cachewait.WithTimeout(3*time.Second))
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
	c := cachewait.NewClient(cc.Client, cachewait.WithTimeout(3*time.Second))

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

// TestCallerContextEndingKeepsTheWrite: a read whose own context ends
// before the cache caught up gets the error, but the write is not
// forgotten: the next read still waits for it (the bug: it was dropped as
// if it had timed out, and the next Get returned NotFound for the object
// just created).
func TestCallerContextEndingKeepsTheWrite(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	c := cachewait.NewClient(cc.Client, cachewait.WithTimeout(3*time.Second))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "impatient"}}
	must(t, c.Create(ctx, cm))
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := c.Get(short, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !cachewait.IsTimeout(err) {
		t.Fatalf("Get with a 20ms context: %v, want a TimeoutError", err)
	}
	must(t, c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}))
}

// TestAPIReaderCostsNothingInTheCommonPath: with WithAPIReader, a life of
// writes and reads through the Client against a cache lagging less than
// After makes no request beyond the writes.
func TestAPIReaderCostsNothingInTheCommonPath(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	noTimeouts(t)
	ns := env.Namespace(t)
	c := cachewait.NewClient(cc.Client, cachewait.WithAPIReader{Reader: cc.APIReader}, cachewait.WithTimeout(3*time.Second))
	cc.Counter.Reset()
	labels := map[string]string{"app": "common"}
	for i := range 3 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("cm-", i), Labels: labels}}
		must(t, c.Create(ctx, cm))
		must(t, c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}))
		cm.Data = map[string]string{"k": "v"}
		must(t, c.Update(ctx, cm))
		must(t, c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns), client.MatchingLabels(labels)))
	}
	must(t, c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm-0"}}))
	must(t, c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns)))
	must(t, c.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns), client.MatchingLabels(labels)))
	var list corev1.ConfigMapList
	must(t, c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels(labels)))
	if len(list.Items) != 0 {
		t.Errorf("List after DeleteAllOf: %d items", len(list.Items))
	}
	if n := cc.Counter.Get("GET") + cc.Counter.Get("LIST"); n != 0 {
		t.Errorf("%d reads of the API server, want none: %s", n, cc.Counter)
	}
}

// TestWriteToTerminatingNamespaceIsSeen: a Namespace being deleted is
// marked with no metadata finalizer, yet stays while spec.finalizers
// ("kubernetes") holds it: a write to it is not a release (the bug: the
// read after it waited for the Namespace to go, the full timeout).
func TestWriteToTerminatingNamespaceIsSeen(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: lag, Informers: []client.Object{&corev1.Namespace{}}})
	noTimeouts(t)
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "terminating-"}}
	must(t, env.Client.Create(ctx, nsObj))
	must(t, cachewait.ForWrite(ctx, cc.Client, nsObj))
	must(t, env.Client.Delete(ctx, nsObj))
	must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(nsObj), nsObj))
	if nsObj.DeletionTimestamp == nil || len(nsObj.Finalizers) != 0 || len(nsObj.Spec.Finalizers) == 0 {
		t.Fatalf("want a Namespace marked, held by spec.finalizers only: %+v %+v", nsObj.ObjectMeta, nsObj.Spec)
	}
	c := cachewait.NewClient(cc.Client, cachewait.WithTimeout(3*time.Second))
	base := nsObj.DeepCopy()
	nsObj.Labels = map[string]string{"seen": "yes"}
	must(t, c.Patch(ctx, nsObj, client.MergeFrom(base)))
	var got corev1.Namespace
	must(t, c.Get(ctx, client.ObjectKeyFromObject(nsObj), &got))
	if got.Labels["seen"] != "yes" {
		t.Errorf("Get after the patch: labels %v, want the patch", got.Labels)
	}
}

// TestDeleteAllOfInAnyRepresentation: a DeleteAllOf made metadata-only is
// waited for by typed, unstructured and metadata Lists alike.
func TestDeleteAllOfInAnyRepresentation(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	noTimeouts(t)
	ns := env.Namespace(t)
	c := cachewait.NewClient(cc.Client, cachewait.WithTimeout(3*time.Second))
	labels := map[string]string{"app": "dao"}
	gvk := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	lists := map[string]func() client.ObjectList{
		"typed": func() client.ObjectList { return &corev1.ConfigMapList{} },
		"unstructured": func() client.ObjectList {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(gvk.GroupVersion().WithKind("ConfigMapList"))
			return l
		},
		"metadata": func() client.ObjectList {
			l := &metav1.PartialObjectMetadataList{}
			l.SetGroupVersionKind(gvk.GroupVersion().WithKind("ConfigMapList"))
			return l
		},
	}
	for name, newList := range lists {
		t.Run(name, func(t *testing.T) {
			for i := range 3 {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint(name, i), Labels: labels}}
				must(t, env.Client.Create(ctx, cm))
				must(t, cachewait.ForWrite(ctx, cc.Client, cm))
			}
			all := &metav1.PartialObjectMetadata{}
			all.SetGroupVersionKind(gvk)
			must(t, c.DeleteAllOf(ctx, all, client.InNamespace(ns), client.MatchingLabels(labels)))
			list := newList()
			must(t, c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels(labels)))
			if n := meta.LenList(list); n != 0 {
				t.Errorf("%s List after DeleteAllOf: %d items", name, n)
			}
		})
	}
}

// TestAPIReaderFailureKeepsTheWrite: a network error of the API reader
// (not an API status) fails the read and keeps the write, as a 500 does; it
// is not mistaken for a cache that cannot serve the object (which would
// forget the write, and the next read would not wait for it).
func TestAPIReaderFailureKeepsTheWrite(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	var fail atomic.Bool
	fail.Store(true)
	down := downReader{Reader: cc.APIReader, down: &fail}
	c := cachewait.NewClient(cc.Client, cachewait.WithAPIReader{Reader: down, After: time.Millisecond},
		cachewait.WithTimeout(3*time.Second))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "apidown"}}
	must(t, c.Create(ctx, cm))
	time.Sleep(5 * time.Millisecond)
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err == nil {
		t.Fatal("Get while the API reader fails: no error")
	}
	fail.Store(false)
	must(t, c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}))
}

// downReader fails every Get with a network error while down is set.
type downReader struct {
	client.Reader
	down *atomic.Bool
}

func (r downReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if r.down.Load() {
		return &url.Error{Op: "Get", URL: "https://apiserver", Err: errors.New("connection refused")}
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// TestDeleteAfterUnreadCreate: a child created and later deleted through a
// Client with no API reader, no read through the Client in between (the
// cache saw both meanwhile): the List after the Delete must not wait.
// It does, the full timeout: the Delete, finding the create still pending,
// counts the cache's absence only once it has seen the object, which it no
// longer holds. Fixing it needs either a cache read at Delete time (which
// can start an informer) or the informer's progress (not exposed by a
// client.Reader); give WithAPIReader meanwhile.
func TestDeleteAfterUnreadCreate(t *testing.T) {
	env.Require(t)
	t.Skip("BUG: Create then Delete through a Client without WithAPIReader, the cache having seen both, stalls the next List for the timeout")
	ctx := context.Background()
	cc := startManager(t, lag)
	noTimeouts(t)
	c := cachewait.NewClient(cc.Client, cachewait.WithTimeout(3*time.Second))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "short-lived"}}
	must(t, c.Create(ctx, cm))
	must(t, cachewait.ForWrite(ctx, cc.Client, cm))
	must(t, c.Delete(ctx, cm))
	must(t, cachewait.ForDelete(ctx, cc.Client, cm))
	must(t, c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(cm.Namespace)))
}

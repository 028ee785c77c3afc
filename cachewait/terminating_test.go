package cachewait_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/cachewait"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
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

	c := cachewait.NewClient(cc.Manager, cachewait.WithTimeout(3*time.Second))
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

	tr := cachewait.NewTracker(cc.Manager)
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner", UID: "owner-uid"}}
	tr.Wrote(owner, pod)
	caughtUp(t, tr, owner)
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
	c := cachewait.NewClient(cc.Manager, cachewait.WithTimeout(3*time.Second))
	base := nsObj.DeepCopy()
	nsObj.Labels = map[string]string{"seen": "yes"}
	must(t, c.Patch(ctx, nsObj, client.MergeFrom(base)))
	var got corev1.Namespace
	must(t, c.Get(ctx, client.ObjectKeyFromObject(nsObj), &got))
	if got.Labels["seen"] != "yes" {
		t.Errorf("Get after the patch: labels %v, want the patch", got.Labels)
	}
}

// TestTerminatingDoesNotBlockLists: a Delete of an object another finalizer
// holds is caught up once the cache shows the deletion mark.
func TestTerminatingDoesNotBlockLists(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	for _, namedOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("deleted by name only: %v", namedOnly), func(t *testing.T) {
			noTimeouts(t)
			c := cachewait.NewClient(cc.Manager, cachewait.WithTimeout(3*time.Second))
			ns := env.Namespace(t)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held", Finalizers: []string{hold}}}
			must(t, c.Create(ctx, cm))
			t.Cleanup(func() { release(t, env.Client, cm.DeepCopy()) })
			del := client.Object(cm)
			if namedOnly {
				del = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cm.Name}}
			}
			must(t, c.Delete(ctx, del))
			for _, opts := range [][]client.ListOption{{client.InNamespace(ns)}, nil} {
				var list corev1.ConfigMapList
				must(t, c.List(ctx, &list, opts...))
				found := false
				for _, item := range list.Items {
					if item.Namespace == ns && item.Name == cm.Name {
						found = item.DeletionTimestamp != nil
					}
				}
				if !found {
					t.Errorf("List %v: the held object is not listed as marked for deletion", opts)
				}
			}
			var got corev1.ConfigMap
			must(t, c.Get(ctx, client.ObjectKeyFromObject(cm), &got))
			if got.DeletionTimestamp == nil {
				t.Error("Get after the Delete does not show the deletion mark")
			}
		})
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

	c := cachewait.NewClient(cc.Manager, cachewait.WithTimeout(3*time.Second))
	must(t, c.Delete(ctx, held("client")))
	var list corev1.ConfigMapList
	must(t, c.List(ctx, &list, client.InNamespace(ns)))
	for _, cm := range list.Items {
		if cm.Name == "client" && cm.DeletionTimestamp == nil {
			t.Error("List after the Delete shows it unmarked")
		}
	}

	tr := cachewait.NewTracker(cc.Manager)
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner", UID: "owner-uid"}}
	child := held("tracked")
	must(t, env.Client.Delete(ctx, child))
	tr.Deleted(owner, child)
	caughtUp(t, tr, owner)
}

// TestPatcherReleaseWithCacheWait: reconcile's Patcher, removing the last
// finalizer of an object being deleted with WithCacheWait, returns at once
// without error (the issue: it blocked and returned a timeout).
func TestPatcherReleaseWithCacheWait(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	noTimeouts(t)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w", Finalizers: []string{hold}}}
	must(t, env.Client.Create(ctx, w))
	must(t, cachewait.ForWrite(ctx, cc.Client, w))
	must(t, env.Client.Delete(ctx, w))
	must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(w), w))
	p, err := reconcile.NewPatcher(cc.Client, w) // WithCacheWait waits on the Patcher's client
	must(t, err)
	w.Finalizers = nil
	err = p.Patch(ctx, w, reconcile.WithCacheWait{Options: []cachewait.WaitOption{cachewait.WithTimeout(3 * time.Second)}})
	if err != nil {
		t.Fatalf("Patch releasing the object with the cache wait: %v", err)
	}
	if err := cc.Client.Get(ctx, client.ObjectKeyFromObject(w), &testapi.Widget{}); !apierrors.IsNotFound(err) {
		t.Errorf("cache after the release: %v, want NotFound", err)
	}
}

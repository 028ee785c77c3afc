package cachewait_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/steadyk8s/steady/cachewait"
)

// ForWrite returns nil once the reader holds the write, and a
// *TimeoutError, meaning "requeue", when it does not in time. Here a fake
// client stands in for the manager's cache.
func ExampleForWrite() {
	ctx := context.Background()
	cache := fake.NewClientBuilder().Build()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "child"}}
	if err := cache.Create(ctx, cm); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("caught up:", cachewait.ForWrite(ctx, cache, cm))

	// An answer the cache has not seen yet (a newer resourceVersion).
	newer := cm.DeepCopy()
	newer.ResourceVersion = "1000000"
	err := cachewait.ForWrite(ctx, cache, newer, cachewait.WithTimeout(20*time.Millisecond))
	fmt.Println("requeue:", errors.As(err, new(*cachewait.TimeoutError)))
	// Output:
	// caught up: <nil>
	// requeue: true
}

// childReconciler counts the children of a ConfigMap in the cache and
// creates the missing one; its client reads its own writes.
type childReconciler struct {
	client.Client
}

func (r *childReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var children corev1.ConfigMapList
	// Waits for this client's earlier writes of ConfigMaps in the namespace.
	if err := r.List(ctx, &children, client.InNamespace(req.Namespace), client.MatchingLabels{"parent": req.Name}); err != nil {
		if errors.As(err, new(*cachewait.TimeoutError)) {
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, err
	}
	if len(children.Items) > 0 {
		return ctrl.Result{}, nil
	}
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, GenerateName: req.Name + "-",
		Labels: map[string]string{"parent": req.Name}}}
	return ctrl.Result{}, r.Create(ctx, child)
}

// Wrap the manager's client so that every reconcile reads what the earlier
// ones wrote. The manager's API reader tells an object someone else deleted
// from one the cache has not seen yet, with one GET, only after the cache
// lagged a second.
func ExampleNewClient() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		panic(err)
	}
	c := cachewait.NewClient(mgr, cachewait.WithTimeout(5*time.Second))
	if err := ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(&childReconciler{Client: c}); err != nil {
		panic(err)
	}
	// A read that must not wait goes through the manager's own client:
	_ = mgr.GetClient().Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "x"}, &corev1.ConfigMap{})
}

// trackedReconciler asks a Tracker, without blocking, whether the cache has
// caught up with what it wrote for this owner, and requeues when not.
type trackedReconciler struct {
	client.Client
	tracker *cachewait.Tracker
}

func (r *trackedReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var owner corev1.ConfigMap
	if err := r.Get(ctx, req.NamespacedName, &owner); err != nil {
		if apierrors.IsNotFound(err) {
			r.tracker.Forget(&owner)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ok, err := r.tracker.CaughtUp(ctx, &owner); err != nil || !ok {
		return ctrl.Result{RequeueAfter: 50 * time.Millisecond}, err
	}
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: owner.Namespace, Name: owner.Name + "-child"}}
	if err := r.Create(ctx, child); err != nil {
		return ctrl.Result{}, client.IgnoreAlreadyExists(err)
	}
	r.tracker.Wrote(&owner, child)
	return ctrl.Result{}, nil
}

// A Tracker checks against the manager's cache; the manager's API reader
// keeps a child that someone else deleted from stalling its owner.
func ExampleTracker() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		panic(err)
	}
	tracker := cachewait.NewTracker(mgr)
	if err := ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).
		Complete(&trackedReconciler{Client: mgr.GetClient(), tracker: tracker}); err != nil {
		panic(err)
	}
}

package finalizer_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/steadyk8s/steady/finalizer"
)

// The mutators report whether they changed the object, and Ensure refuses an
// object that is already being deleted, before any API call.
func ExampleEnsure() {
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart"}}
	changed, err := finalizer.Ensure(obj, "example.com/cleanup")
	fmt.Println(changed, err)
	changed, err = finalizer.Ensure(obj, "example.com/cleanup")
	fmt.Println(changed, err)

	now := metav1.Now()
	obj.DeletionTimestamp = &now
	_, err = finalizer.Ensure(obj, "example.com/other")
	var deleting *finalizer.DeletingError
	fmt.Println(errors.As(err, &deleting))
	fmt.Println(err)
	fmt.Println(finalizer.Remove(obj, "example.com/cleanup"), finalizer.Has(obj, "example.com/cleanup"))
	// Output:
	// true <nil>
	// false <nil>
	// true
	// finalizer: not adding example.com/other to ConfigMap shop/cart: the object is being deleted
	// true false
}

// A cleanup that takes several rounds reports its progress on the object
// and returns InProgress: Handle writes the progress, keeps the finalizer
// and asks for a requeue; once the cleanup succeeds, the finalizer goes
// (and with it, here, the object).
func ExampleInProgress() {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart", Finalizers: []string{"example.com/cleanup"}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cm).Build()
	_ = c.Delete(ctx, cm)

	remaining := 2 // objects left to delete outside the API server
	h := finalizer.NewHandler(c)
	_ = h.Register("example.com/cleanup", finalizer.Func(func(ctx context.Context, obj client.Object) error {
		remaining--
		obj.SetAnnotations(map[string]string{"example.com/cleanup": fmt.Sprintf("%d left", remaining)})
		if remaining > 0 {
			return finalizer.InProgress(5*time.Second, "%d left", remaining)
		}
		return nil
	}))

	key := client.ObjectKeyFromObject(cm)
	for range 2 {
		obj := &corev1.ConfigMap{}
		if err := c.Get(ctx, key, obj); err != nil {
			fmt.Println("gone")
			return
		}
		res, err := h.Handle(ctx, obj)
		fmt.Println(obj.Annotations["example.com/cleanup"], res.RequeueAfter, err)
	}
	fmt.Println(c.Get(ctx, key, &corev1.ConfigMap{}) != nil)
	// Output:
	// 1 left 5s <nil>
	// 0 left 0s <nil>
	// true
}

// A finalizer name must be a qualified name: Register, Ensure and
// reconcile.Patcher refuse another with a *NameError before anything is
// written.
func ExampleValidateName() {
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart"}}
	_, err := finalizer.Ensure(obj, "clean up!")
	var ne *finalizer.NameError
	fmt.Println(errors.As(err, &ne), ne.Object, ne.Field, obj.Finalizers)
	fmt.Println(finalizer.ValidateName(obj, "example.com/cleanup"))
	// Output:
	// true ConfigMap shop/cart metadata.finalizers []
	// <nil>
}

package finalizer_test

import (
	"context"
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

// A finalizer name must be a qualified name ("example.com/cleanup"):
// Register refuses another, as reconcile.Patcher does before anything is
// written. Several When are all to select an object.
func ExampleHandler_Register() {
	h := finalizer.NewHandler(nil)
	noop := finalizer.Func(func(context.Context, client.Object) error { return nil })
	fmt.Println(h.Register("clean up!", noop))
	isLB := finalizer.When(func(o client.Object) bool { return o.(*corev1.Service).Spec.Type == corev1.ServiceTypeLoadBalancer })
	mine := finalizer.When(func(o client.Object) bool { return o.GetLabels()["example.com/ip"] == "allocate" })
	fmt.Println(h.Register("example.com/ip", noop, isLB, mine))
	// Output:
	// finalizer: invalid name "clean up!" for field metadata.finalizers: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')
	// <nil>
}

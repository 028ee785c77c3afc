package cachewait_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/cachewait"
)

// After a create, wait until the manager's cache holds it before the next
// reconcile counts children from the cache. Here the cache lags 200ms.
func ExampleForWrite() {
	ctx := context.Background()
	cached, stop, err := newManager(200 * time.Millisecond)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "example-"}}
	_ = env.Client.Create(ctx, ns)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "child"}}
	_ = env.Client.Create(ctx, cm)
	err = cached.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
	fmt.Println("right after the create:", err != nil)

	if err := cachewait.ForWrite(ctx, cached, cm); err != nil {
		fmt.Println(err) // a *TimeoutError: requeue
		return
	}
	err = cached.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
	fmt.Println("after ForWrite:", err)
	// Output:
	// right after the create: true
	// after ForWrite: <nil>
}

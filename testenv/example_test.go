package testenv_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/testenv"
)

// Start a control plane, write through its client and read back. In a test
// package, call env.Run(m) from TestMain instead of Start and Stop.
func Example() {
	e := testenv.New()
	if err := e.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop()

	ctx := context.Background()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "greeting"},
		Data:       map[string]string{"hello": "world"},
	}
	if err := e.Client.Create(ctx, cm); err != nil {
		fmt.Println(err)
		return
	}
	var got corev1.ConfigMap
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(got.Data["hello"])
	// Output: world
}

// Restart the API server under a client: it comes back on the same etcd,
// address and certificates, so the client reconnects by itself and finds
// what was written before. A running manager reconnects the same way.
func ExampleEnvironment_StopAPIServer() {
	e := testenv.New()
	if err := e.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop()

	ctx := context.Background()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kept"},
		Data:       map[string]string{"written": "before the restart"},
	}
	if err := e.Client.Create(ctx, cm); err != nil {
		fmt.Println(err)
		return
	}
	if err := e.StopAPIServer(); err != nil {
		fmt.Println(err)
		return
	}
	if err := e.StartAPIServer(ctx); err != nil {
		fmt.Println(err)
		return
	}
	var got corev1.ConfigMap
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(got.Data["written"])
	// Output: before the restart
}

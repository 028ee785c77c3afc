package cachewait

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestReadIsCheckedAgainstItsResult: a child created and deleted through
// the Client; the wait finds it absent from the cache and the API reader
// says it is gone, so the List may go on; but the cache gets to the create
// (an older state) before the List reads it. The List reads again rather
// than return the deleted child.
func TestReadIsCheckedAgainstItsResult(t *testing.T) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "blink", UID: "u1"}}
	store := fake.NewClientBuilder().Build()
	lists := 0
	cache := interceptor.NewClient(store, interceptor.Funcs{
		// The waits find nothing: the cache has not seen the create yet.
		Get: func(_ context.Context, _ client.WithWatch, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
			return apierrors.NewNotFound(corev1.Resource("configmaps"), key.Name)
		},
		// The store stays as the cache will show it: created, not deleted.
		Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error { return nil },
		// The first List sees the create; then the cache gets to the delete.
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			lists++
			err := c.List(ctx, list, opts...)
			if lists == 1 {
				_ = c.Delete(ctx, cm.DeepCopy())
			}
			return err
		},
	})
	gone := readerFunc(func(key client.ObjectKey) error {
		return apierrors.NewNotFound(corev1.Resource("configmaps"), key.Name)
	})
	c := NewClient(fakeCluster{c: cache}, WithAPIReader{Reader: gone, After: time.Nanosecond}, WithTimeout(time.Second))
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 || lists != 2 {
		t.Errorf("List after the delete: %d items after %d reads, want none after 2", len(list.Items), lists)
	}
}

// readerFunc is a client.Reader whose Get answers f.
type readerFunc func(client.ObjectKey) error

func (f readerFunc) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	return f(key)
}

func (readerFunc) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

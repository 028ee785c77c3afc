package cachewait_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/cachewait"
)

// TestAPIReaderCostsNothingInTheCommonPath: with WithAPIReader, a life of
// writes and reads through the Client against a cache lagging less than
// After makes no request beyond the writes.
func TestAPIReaderCostsNothingInTheCommonPath(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, lag)
	noTimeouts(t)
	ns := env.Namespace(t)
	c := cachewait.NewClient(cc.Manager, cachewait.WithAPIReader{Reader: cc.APIReader}, cachewait.WithTimeout(3*time.Second))
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
	c := cachewait.NewClient(cc.Manager, cachewait.WithAPIReader{Reader: down, After: time.Millisecond},
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

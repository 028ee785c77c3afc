package cachewait_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/steadyk8s/steady/cachewait"
	"github.com/steadyk8s/steady/testenv"
)

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

package ownership_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// TestApplyWhileAnotherWriterKeepsChangingTheChild: a child that another
// controller writes more often than the cache delivers its events (a
// heartbeat annotation, a status) is still applied. Server-side apply
// needs no lock to be safe: a lock on the cache's resourceVersion, which
// is always behind here, must not turn every apply into a conflict.
func TestApplyWhileAnotherWriterKeepsChangingTheChild(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	a := owner(t, ns, "a")
	cc := startCached(t)
	desired := func(v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "busy"}, Data: map[string]string{"k": v}}
	}
	if _, err := applyObject(ctx, remembering(), a, desired("v0"), "steady-test"); err != nil {
		t.Fatal(err)
	}
	cachedSees(t, cc, desired("v0"))

	// The other writer: a heartbeat every 20ms, far faster than the 300ms
	// the cache lags.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"heartbeat":"%d"}}}`, i)
			cm := desired("")
			_ = env.Client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("other"))
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(100 * time.Millisecond)

	for i := 1; i <= 3; i++ {
		v := fmt.Sprintf("v%d", i)
		cc.Counter.Reset()
		start := time.Now()
		op, err := applyObject(ctx, cc.Client, a, desired(v), "steady-test")
		t.Logf("apply %s: %s, %v after %s; requests %s", v, op, err, time.Since(start).Round(time.Millisecond), cc.Counter)
		if err != nil || op != controllerutil.OperationResultUpdated {
			t.Errorf("apply %s: %s, %v; want updated", v, op, err)
		}
	}
}

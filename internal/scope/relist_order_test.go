package scope

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestAListInKeyOrderEndsNothingEarly: a list (an informer's first, or a
// re-list after its watch expired) holds the objects in key order, not
// resourceVersion order. Where client-go applies it to the store in
// batches (AtomicFIFO off: KUBE_FEATURE_AtomicFIFO=false; on by default
// since 1.36), the handler of an early object, newer than a write of a
// later one, can run before that later one is in the store: the informer
// has not gone past the write, and the write must stay. Here, with a real
// client-go informer: a-0 at 5000 first, z at 3000 (this process's
// write, made while the watch was down) in the list's second batch.
func TestAListInKeyOrderEndsNothingEarly(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.AtomicFIFO, false)
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false) // a LIST, as from an API server without streaming lists
	const n = 1500
	items := make([]corev1.ConfigMap, 0, n)
	items = append(items, *cm("a-0", "u-a", "5000"))
	for i := 1; i < n-1; i++ {
		items = append(items, *cm(fmt.Sprintf("f-%04d", i), fmt.Sprint("u-f", i), fmt.Sprint(100+i)))
	}
	items = append(items, *cm("z", "u-z", "3000"))
	ended := 0
	const attempts = 20
	for range attempts {
		lw := &toolscache.ListWatch{
			ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
				return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "6000"}, Items: items}, nil
			},
			WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
				return watch.NewFake(), nil
			},
		}
		inf := toolscache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
		fi := &informertest.FakeInformers{Scheme: scheme.Scheme, InformersByGVK: map[schema.GroupVersionKind]toolscache.SharedIndexInformer{cmGVK: inf}}
		s := New(fake.NewClientBuilder().Build(), nil, fi)
		s.RecordWrite(key("z"), cm("z", "u-z", "3000")) // hooks the informer; nothing shown yet
		ctx, cancel := context.WithCancel(context.Background())
		go inf.RunWithContext(ctx)
		deadline := time.Now().Add(10 * time.Second)
		for (!inf.HasSynced() || s.Unshown() != 0) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		cancel()
		if s.Unshown() != 0 {
			t.Fatal("the informer never showed the write")
		}
		if _, behind := s.OwnWriteAhead(key("z"), cm("z", "u-z", "2999")); !behind {
			ended++
		}
	}
	if ended > 0 {
		t.Errorf("a write of an object the list holds was ended %d times in %d, by an earlier, newer object's event before the store held it", ended, attempts)
	}
}

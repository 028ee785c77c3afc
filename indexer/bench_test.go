package indexer_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/indexer"
)

const ownersPerObjects = 10 // every owner has ten children

func child(ns string, i int) *corev1.ConfigMap {
	owner := fmt.Sprintf("owner-%d", i/ownersPerObjects)
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%d", i),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: owner,
			UID: types.UID("uid-" + owner), Controller: new(true)}}}}
}

// BenchmarkLookup finds the ten children of one owner among n objects in the
// same informer cache, by the controller-owner index and by listing all and
// filtering, alternating the two in one run; it reports both times and their
// ratio (list-filter / indexed).
func BenchmarkLookup(b *testing.B) {
	ctx := context.Background()
	children := indexer.ControllerOwner[*corev1.ConfigMap]()
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			ns := env.Namespace(b)
			create(b, ns, n)
			c := startManager(b, func(mgr ctrl.Manager) error { return children.Register(ctx, mgr.GetFieldIndexer()) })
			key := indexer.OwnerKey(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "owner-7")
			// Wait until the cache holds all n.
			for {
				var all corev1.ConfigMapList
				if err := c.List(ctx, &all, client.InNamespace(ns)); err != nil {
					b.Fatal(err)
				}
				if len(all.Items) == n {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			var indexed, filtered time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				got, err := children.Find(ctx, c, env.Scheme, key, client.InNamespace(ns))
				indexed += time.Since(start)
				if err != nil || len(got) != ownersPerObjects {
					b.Fatalf("indexed: %d, %v", len(got), err)
				}

				start = time.Now()
				var all corev1.ConfigMapList
				if err := c.List(ctx, &all, client.InNamespace(ns)); err != nil {
					b.Fatal(err)
				}
				var found int
				for j := range all.Items {
					if ref := metav1.GetControllerOfNoCopy(&all.Items[j]); ref != nil && ref.Kind == "Deployment" && ref.Name == "owner-7" {
						found++
					}
				}
				filtered += time.Since(start)
				if found != ownersPerObjects {
					b.Fatalf("list-filter: %d", found)
				}
			}
			b.ReportMetric(float64(indexed.Nanoseconds())/float64(b.N), "indexed-ns/op")
			b.ReportMetric(float64(filtered.Nanoseconds())/float64(b.N), "list-filter-ns/op")
			b.ReportMetric(float64(filtered)/float64(indexed), "ratio")
		})
	}
}

func create(b *testing.B, ns string, n int) {
	b.Helper()
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := env.Client.Create(context.Background(), child(ns, i)); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
}

// BenchmarkIndexMemory reports the heap an index costs per object: a
// client-go store of n objects with and without the controller-owner index
// (with the namespaced and all-namespaces keys controller-runtime stores).
func BenchmarkIndexMemory(b *testing.B) {
	idx := indexer.ControllerOwner[*corev1.ConfigMap]()
	indexFunc := func(o any) ([]string, error) {
		cm := o.(*corev1.ConfigMap)
		var keys []string
		for _, v := range idx.Values(cm) {
			keys = append(keys, cm.Namespace+"/"+v, "__all_namespaces/"+v)
		}
		return keys, nil
	}
	const n = 10000
	objs := make([]*corev1.ConfigMap, n)
	for i := range objs {
		objs[i] = child("ns", i)
	}
	heap := func(indexers cache.Indexers) uint64 {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers)
		for _, o := range objs {
			_ = store.Add(o)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(store)
		return after.HeapAlloc - before.HeapAlloc
	}
	var with, without uint64
	for i := 0; i < b.N; i++ {
		without += heap(cache.Indexers{})
		with += heap(cache.Indexers{indexer.ControllerOwnerIndex: indexFunc})
	}
	b.ReportMetric(float64(with-without)/float64(b.N)/n, "index-bytes/obj")
}

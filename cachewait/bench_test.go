package cachewait_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/cachewait"
)

// BenchmarkWaitPerWrite measures, side by side on one control plane, the
// wait ForWrite adds after each update until the (unslowed) informer cache
// holds it, and the cost of the alternative: a live GET through the API
// reader. It reports the p50 and p99 of both, in microseconds.
func BenchmarkWaitPerWrite(b *testing.B) {
	ctx := context.Background()
	cached := startManager(b, 0).Client
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(b), Name: "bench"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		b.Fatal(err)
	}
	waits := make([]time.Duration, 0, b.N)
	gets := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cm.Data = map[string]string{"i": fmt.Sprint(i)}
		if err := env.Client.Update(ctx, cm); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := cachewait.ForWrite(ctx, cached, cm); err != nil {
			b.Fatal(err)
		}
		waits = append(waits, time.Since(start))

		start = time.Now()
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil {
			b.Fatal(err)
		}
		gets = append(gets, time.Since(start))
	}
	b.StopTimer()
	for name, d := range map[string][]time.Duration{"wait": waits, "live-get": gets} {
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2].Microseconds()), name+"-p50-µs")
		b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), name+"-p99-µs")
	}
}

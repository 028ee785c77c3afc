package ownership_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
)

var verbs = []string{"GET", "PUT", "PATCH", "POST", "DRYRUN-PUT", "DRYRUN-PATCH"}

func total(n *testapi.Counter) int {
	sum := 0
	for _, v := range verbs {
		sum += n.Get(v)
	}
	return sum
}

// BenchmarkCreateOrUpdateUnchanged counts the requests of CreateOrUpdate on
// a Deployment that is already as desired, steady beside controllerutil,
// for a mutate that assigns the spec wholesale (dropping the server's
// defaults) and one that sets a single field. It reports requests per call
// by verb for each, and the ratio of their totals (steady / controllerutil).
func BenchmarkCreateOrUpdateUnchanged(b *testing.B) {
	ctx := context.Background()
	ns := env.Namespace(b)
	o := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	if err := env.Client.Create(ctx, o); err != nil {
		b.Fatal(err)
	}
	for _, m := range []struct {
		name   string
		mutate func(*appsv1.Deployment) ownership.MutateFn
	}{
		{"wholesale", func(d *appsv1.Deployment) ownership.MutateFn { return deployment(d, "nginx:1") }},
		{"one-field", func(d *appsv1.Deployment) ownership.MutateFn {
			return func() error { d.Spec.Template.Spec.Containers[0].Image = "nginx:1"; return nil }
		}},
	} {
		b.Run(m.name, func(b *testing.B) {
			sc, sn, err := testapi.NewCountingClient(env.Config, env.Scheme)
			if err != nil {
				b.Fatal(err)
			}
			cc, cn, err := testapi.NewCountingClient(env.Config, env.Scheme)
			if err != nil {
				b.Fatal(err)
			}
			for _, name := range []string{"steady-" + m.name, "cu-" + m.name} {
				d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				if _, err := ownership.CreateOrUpdate(ctx, remembering(), o, d, deployment(d, "nginx:1")); err != nil {
					b.Fatal(err)
				}
			}
			sn.Reset()
			cn.Reset()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "steady-" + m.name}}
				if _, err := ownership.CreateOrUpdate(ctx, sc, o, d, m.mutate(d)); err != nil {
					b.Fatal(err)
				}
				d = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cu-" + m.name}}
				mutate := m.mutate(d)
				if _, err := controllerutil.CreateOrUpdate(ctx, cc, d, func() error {
					if err := mutate(); err != nil {
						return err
					}
					return controllerutil.SetControllerReference(o, d, cc.Scheme())
				}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			for _, v := range verbs {
				if x := sn.Get(v); x > 0 {
					b.ReportMetric(float64(x)/float64(b.N), "steady-"+v+"/op")
				}
				if x := cn.Get(v); x > 0 {
					b.ReportMetric(float64(x)/float64(b.N), "controllerutil-"+v+"/op")
				}
			}
			b.ReportMetric(float64(sn.Writes())/float64(b.N), "steady-writes/op")
			b.ReportMetric(float64(cn.Writes())/float64(b.N), "controllerutil-writes/op")
			b.ReportMetric(float64(total(sn))/float64(total(cn)), "requests-ratio")
		})
	}
}

// BenchmarkCreateOrUpdateConverged measures CreateOrUpdate, as an operator
// runs it, through a manager's cached client, on a Deployment that has
// converged: its live copy differs from the wholesale desired spec only by
// the API server's defaults. It reports API requests per call (the cached
// GET is none; the remembered verdict "only defaults differ" makes the
// write none) and,
// with -benchmem, the allocations of the comparison.
func BenchmarkCreateOrUpdateConverged(b *testing.B) { benchmarkConverged(b, createOrUpdate) }
func benchmarkConverged(b *testing.B, fn createOr) {
	ctx := context.Background()
	cc := testapi.StartManager(b, env, testapi.ManagerOptions{Informers: []client.Object{&appsv1.Deployment{}}})
	ns := env.Namespace(b)
	o := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	if err := env.Client.Create(ctx, o); err != nil {
		b.Fatal(err)
	}
	call := func() controllerutil.OperationResult {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
		op, err := fn(ctx, cc.Client, o, d, deployment(d, "nginx:1"))
		if err != nil {
			b.Fatal(err)
		}
		return op
	}
	// Create, wait for the cache to show it, converge (one write the server
	// finds nothing in).
	call()
	deadline := time.Now().Add(10 * time.Second)
	for {
		cc.Counter.Reset()
		if call() == controllerutil.OperationResultNone && total(cc.Counter) == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("no convergence: %s", cc.Counter)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cc.Counter.Reset()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if op := call(); op != controllerutil.OperationResultNone {
			b.Fatalf("call %d: %s", i, op)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(total(cc.Counter))/float64(b.N), "requests/op")
	b.ReportMetric(float64(cc.Counter.Get("DRYRUN-PUT"))/float64(b.N), "dryruns/op")
}

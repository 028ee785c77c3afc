package reconcile_test

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// BenchmarkPatch measures Patcher.Patch on a typed and an unstructured
// Widget: a reconcile that changes nothing (no request: CPU and memory
// only), one that changes status (1 PATCH), and one whose status write
// conflicts with another writer (a 409, a GET, the retried PATCH), each
// against the careful hand-written equivalent (typed DeepEqual of the
// status, then Status().Update) where it has one. Requests per op are
// reported.
//
//	go test -run '^$' -bench BenchmarkPatch -benchmem ./reconcile/
func BenchmarkPatch(b *testing.B) {
	env.Require(b)
	ctx := context.Background()
	c, n, err := testapi.NewCountingClient(env.Config, env.Scheme)
	if err != nil {
		b.Fatal(err)
	}
	ns := env.Namespace(b)
	runs := 0 // -count runs each sub-benchmark again: a new Widget each time
	newWidget := func(b *testing.B, name string) *testapi.Widget {
		runs++
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", name, runs)}, Spec: testapi.WidgetSpec{Size: 1}}
		if err := c.Create(ctx, w); err != nil {
			b.Fatal(err)
		}
		for _, typ := range []string{"Available", "Progressing", conditions.Ready} {
			conditions.MarkTrue(w, typ, "Done", "all %d replicas are up", 3)
		}
		w.Status.ObservedGeneration, w.Status.Phase = w.Generation, "Running"
		if err := c.Status().Update(ctx, w); err != nil {
			b.Fatal(err)
		}
		return w
	}
	// shaped is w as the shape's object: w itself, or w read as an
	// unstructured Widget.
	shaped := func(b *testing.B, w *testapi.Widget, typed bool) client.Object {
		if typed {
			return w
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(testapi.GroupVersion.WithKind("Widget"))
		if err := c.Get(ctx, client.ObjectKeyFromObject(w), u); err != nil {
			b.Fatal(err)
		}
		return u
	}
	setReplicas := func(b *testing.B, obj client.Object, i int) {
		switch o := obj.(type) {
		case *testapi.Widget:
			o.Status.Replicas = i
		case *unstructured.Unstructured:
			if err := unstructured.SetNestedField(o.Object, int64(i), "status", "replicas"); err != nil {
				b.Fatal(err)
			}
		}
	}
	report := func(b *testing.B) {
		b.ReportMetric(float64(total(n))/float64(b.N), "requests/op")
	}
	for _, typed := range []bool{true, false} {
		shape := map[bool]string{true: "typed", false: "unstructured"}[typed]
		b.Run(shape+"/no change", func(b *testing.B) {
			w := newWidget(b, "nochange-"+shape)
			obj := shaped(b, w, typed)
			n.Reset()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				p, err := reconcile.NewPatcher(c, obj)
				if err != nil {
					b.Fatal(err)
				}
				if typed {
					conditions.MarkTrue(w, conditions.Ready, "Done", "all %d replicas are up", 3)
				}
				if err := p.Patch(ctx, obj, reconcile.WithObservedGeneration{}); err != nil {
					b.Fatal(err)
				}
			}
			report(b)
			if total(n) != 0 {
				b.Fatalf("requests %s for no change", n)
			}
		})
		b.Run(shape+"/no change, hand-written", func(b *testing.B) {
			if !typed {
				b.Skip("the hand-written code is typed")
			}
			w := newWidget(b, "nochange-hand")
			n.Reset()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				before := w.DeepCopy().Status
				meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: conditions.Ready, Status: metav1.ConditionTrue,
					Reason: "Done", Message: fmt.Sprintf("all %d replicas are up", 3), ObservedGeneration: w.Generation})
				w.Status.ObservedGeneration = w.Generation
				if !equalStatus(&before, &w.Status) {
					if err := c.Status().Update(ctx, w); err != nil {
						b.Fatal(err)
					}
				}
			}
			report(b)
		})
		b.Run(shape+"/status change", func(b *testing.B) {
			obj := shaped(b, newWidget(b, "status-"+shape), typed)
			n.Reset()
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				i++
				p, err := reconcile.NewPatcher(c, obj)
				if err != nil {
					b.Fatal(err)
				}
				setReplicas(b, obj, i)
				if err := p.Patch(ctx, obj, reconcile.WithObservedGeneration{}); err != nil {
					b.Fatal(err)
				}
			}
			report(b)
		})
		b.Run(shape+"/status change, hand-written", func(b *testing.B) {
			if !typed {
				b.Skip("the hand-written code is typed")
			}
			w := newWidget(b, "status-hand")
			n.Reset()
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				i++
				before := w.DeepCopy().Status
				w.Status.Replicas = i
				if !equalStatus(&before, &w.Status) {
					if err := c.Status().Update(ctx, w); err != nil {
						b.Fatal(err)
					}
				}
			}
			report(b)
		})
		b.Run(shape+"/conflict", func(b *testing.B) {
			w := newWidget(b, "conflict-"+shape)
			obj := shaped(b, w, typed)
			other := w.DeepCopy()
			n.Reset()
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				i++
				b.StopTimer()
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), other); err != nil {
					b.Fatal(err)
				}
				other.Status.Phase = fmt.Sprintf("theirs-%d", i)
				if err := env.Client.Status().Update(ctx, other); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				p, err := reconcile.NewPatcher(c, obj)
				if err != nil {
					b.Fatal(err)
				}
				setReplicas(b, obj, i)
				if err := p.Patch(ctx, obj); err != nil {
					b.Fatal(err)
				}
			}
			report(b)
		})
	}
}

// equalStatus is the hand-written controller's typed equality check.
func equalStatus(a, b *testapi.WidgetStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration || a.Phase != b.Phase || a.Replicas != b.Replicas ||
		len(a.Conditions) != len(b.Conditions) || len(a.Namespaces) != len(b.Namespaces) {
		return false
	}
	for i := range a.Conditions {
		if a.Conditions[i] != b.Conditions[i] {
			return false
		}
	}
	for i := range a.Namespaces {
		if a.Namespaces[i] != b.Namespaces[i] {
			return false
		}
	}
	return true
}

// total is the count of API requests of every verb but discovery.
func total(n *testapi.Counter) int {
	sum := 0
	for _, v := range []string{"GET", "LIST", "WATCH", "POST", "PUT", "PATCH", "DELETE"} {
		sum += n.Get(v)
	}
	return sum
}

package patch

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/testapi"
)

// BenchmarkPatch measures the engine's own work for the two writes of a
// reconcile that converges a new object (bench/harness's
// BenchmarkConvergeReconcile): adding a finalizer, and the status with its
// conditions and observedGeneration. The client records the body and
// answers with nothing, so only the engine is measured: converting,
// planning, rebasing and encoding (the object as changed is made outside
// the timer).
//
//	go test -run '^$' -bench Patch -benchmem ./internal/patch/
func BenchmarkPatch(b *testing.B) {
	read := &testapi.Widget{
		TypeMeta: metav1.TypeMeta{APIVersion: "test.steady.dev/v1", Kind: "Widget"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-steady-n1000", Name: "team-0001", UID: "5f1c7c6e-8d1b-4f5e-9d0e-2a6b1c3d4e5f",
			ResourceVersion: "123456", Generation: 1, CreationTimestamp: metav1.Unix(1700000000, 0), Labels: map[string]string{"app": "x"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "bench", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "test.steady.dev/v1",
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:size":{}}}`)}}}},
		Spec: testapi.WidgetSpec{Size: 3, Color: "red"},
	}
	sent := 0
	w := Writer{Client: recording(func(client.Patch) error { sent++; return nil })}
	for _, c := range []struct {
		name   string
		o      Options
		change func(*testapi.Widget)
	}{
		{"finalizer", Options{}, func(w *testapi.Widget) { w.Finalizers = append(w.Finalizers, "bench.steady.dev/finalizer") }},
		{"status", Options{ObservedGeneration: true, CheckOwnWrites: true}, func(w *testapi.Widget) {
			w.Status.Conditions = []metav1.Condition{
				{Type: "ChildrenReady", Status: metav1.ConditionTrue, Reason: "Reconciled", ObservedGeneration: 1, LastTransitionTime: metav1.Unix(1700000100, 0)},
				{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Succeeded", ObservedGeneration: 1, LastTransitionTime: metav1.Unix(1700000100, 0)},
			}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			sent = 0
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				obj := read.DeepCopy()
				c.change(obj)
				b.StartTimer()
				if _, err := w.Patch(context.Background(), read, obj, c.o); err != nil {
					b.Fatal(err)
				}
			}
			if sent != b.N {
				b.Fatalf("%d writes for %d patches", sent, b.N)
			}
		})
	}
}

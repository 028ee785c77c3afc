package conditions_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
)

// TestKstatusReadsOurConditions computes kstatus (what kubectl wait, Flux
// and cli-utils use) on objects marked with this package.
func TestKstatusReadsOurConditions(t *testing.T) {
	for _, tc := range []struct {
		name string
		mark func(w *testapi.Widget)
		want status.Status
	}{
		{"reconciling", func(w *testapi.Widget) { conditions.MarkReconciling(w, "Progressing", "creating pods") }, status.InProgressStatus},
		{"stalled", func(w *testapi.Widget) { conditions.MarkStalled(w, "BadSpec", "size < 0") }, status.FailedStatus},
		{"done", func(w *testapi.Widget) {
			conditions.MarkReconciling(w, "Progressing", "")
			conditions.ClearProgress(w)
			conditions.MarkTrue(w, conditions.Ready, "Succeeded", "")
		}, status.CurrentStatus},
		{"generation not observed", func(w *testapi.Widget) {
			conditions.MarkTrue(w, conditions.Ready, "Succeeded", "")
			w.Status.ObservedGeneration = w.Generation - 1
		}, status.InProgressStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &testapi.Widget{TypeMeta: metav1.TypeMeta{APIVersion: testapi.GroupVersion.String(), Kind: "Widget"},
				ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", Generation: 3}}
			w.Status.ObservedGeneration = 3
			tc.mark(w)
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w)
			if err != nil {
				t.Fatal(err)
			}
			res, err := status.Compute(&unstructured.Unstructured{Object: m})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.want {
				t.Errorf("kstatus = %s (%s), want %s", res.Status, res.Message, tc.want)
			}
		})
	}
}

package conditions_test

import (
	"context"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/testenv"
)

var env = testapi.NewEnv(testenv.WithCRDs{Paths: []string{"testdata"}})

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

func widget(gen int64) *testapi.Widget {
	return &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", Generation: gen}}
}

func TestMarkingTheSameStateTwiceChangesNothing(t *testing.T) {
	w := widget(3)
	if !conditions.MarkTrue(w, "DatabaseReady", "Provisioned", "db %s up", "main") {
		t.Fatal("first mark reported no change")
	}
	before := w.DeepCopy()
	if conditions.MarkTrue(w, "DatabaseReady", "Provisioned", "db %s up", "main") {
		t.Error("second identical mark reported a change")
	}
	if !equality.Semantic.DeepEqual(before, w) {
		t.Errorf("second identical mark changed the object:\n%v\n%v", before.Status.Conditions, w.Status.Conditions)
	}
	c := conditions.Get(w, "DatabaseReady")
	if c.Message != "db main up" || c.ObservedGeneration != 3 || c.Reason != "Provisioned" {
		t.Errorf("condition = %+v", c)
	}
}

func TestLastTransitionTimeChangesOnlyOnFlip(t *testing.T) {
	w := widget(1)
	old := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	conditions.Set(w, metav1.Condition{Type: "A", Status: metav1.ConditionFalse, Reason: "Waiting", LastTransitionTime: old})

	w.Generation = 2
	if !conditions.MarkFalse(w, "A", "StillWaiting", "") {
		t.Fatal("a new reason and generation reported no change")
	}
	c := conditions.Get(w, "A")
	if !c.LastTransitionTime.Equal(&old) {
		t.Errorf("LastTransitionTime moved without a flip: %v", c.LastTransitionTime)
	}
	if c.ObservedGeneration != 2 {
		t.Errorf("ObservedGeneration = %d, want 2", c.ObservedGeneration)
	}
	conditions.MarkTrue(w, "A", "Done", "")
	if c := conditions.Get(w, "A"); !c.LastTransitionTime.After(old.Time) {
		t.Errorf("LastTransitionTime did not move on a flip: %v", c.LastTransitionTime)
	}
}

func TestGettersAndDelete(t *testing.T) {
	w := widget(1)
	conditions.MarkTrue(w, "T", "R", "")
	conditions.MarkFalse(w, "F", "R", "")
	conditions.MarkUnknown(w, "U", "R", "")
	for _, tc := range []struct {
		name                      string
		has, isTrue, isFalse, unk bool
	}{
		{"T", true, true, false, false},
		{"F", true, false, true, false},
		{"U", true, false, false, true},
		{"Missing", false, false, false, true},
	} {
		if got := conditions.Get(w, tc.name) != nil; got != tc.has {
			t.Errorf("Get(%s) != nil is %v", tc.name, got)
		}
		if got := conditions.IsTrue(w, tc.name); got != tc.isTrue {
			t.Errorf("IsTrue(%s) = %v", tc.name, got)
		}
		if c := conditions.Get(w, tc.name); (c != nil && c.Status == metav1.ConditionFalse) != tc.isFalse {
			t.Errorf("Get(%s) = %+v, want False: %v", tc.name, c, tc.isFalse)
		}
		if got := conditions.IsUnknown(w, tc.name); got != tc.unk {
			t.Errorf("IsUnknown(%s) = %v", tc.name, got)
		}
	}
	if !conditions.Delete(w, "T") || conditions.Get(w, "T") != nil {
		t.Error("Delete(T) did not remove it")
	}
	if conditions.Delete(w, "T") {
		t.Error("deleting an absent condition reported a change")
	}
}

func TestSummary(t *testing.T) {
	type mark struct {
		typ    string
		status metav1.ConditionStatus
		reason string
		msg    string
	}
	for _, tc := range []struct {
		name       string
		marks      []mark
		opts       []conditions.SummaryOption
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string
	}{
		{"all true", []mark{{"A", "True", "Ok", ""}, {"B", "True", "Ok", ""}},
			[]conditions.SummaryOption{conditions.SummaryOptions{ConditionTypes: []string{"A", "B"}}}, "True", "Succeeded", ""},
		{"the first bad condition decides the reason", []mark{{"A", "True", "Ok", ""}, {"B", "False", "BucketMissing", "no bucket"}, {"C", "False", "QuotaExceeded", "quota"}},
			[]conditions.SummaryOption{conditions.SummaryOptions{ConditionTypes: []string{"A", "B", "C"}}}, "False", "BucketMissing", "B: no bucket; C: quota"},
		{"order of types, not of the object", []mark{{"B", "False", "BucketMissing", "no bucket"}, {"C", "False", "QuotaExceeded", "quota"}},
			[]conditions.SummaryOption{conditions.SummaryOptions{ConditionTypes: []string{"C", "B"}}}, "False", "QuotaExceeded", "C: quota; B: no bucket"},
		{"negative polarity true is bad", []mark{{"A", "True", "Ok", ""}, {"Degraded", "True", "DiskFull", "disk full"}},
			[]conditions.SummaryOption{conditions.SummaryOptions{ConditionTypes: []string{"A", "Degraded"}, NegativePolarity: []string{"Degraded"}}}, "False", "DiskFull", "Degraded: disk full"},
		{"negative polarity false is good", []mark{{"A", "True", "Ok", ""}, {"Degraded", "False", "Fine", ""}},
			[]conditions.SummaryOption{conditions.SummaryOptions{ConditionTypes: []string{"A", "Degraded"}, NegativePolarity: []string{"Degraded"}, TrueReason: "AllGood"}}, "True", "AllGood", ""},
		{"stalled is negative by nature", []mark{{"A", "True", "Ok", ""}, {"Stalled", "True", "BadSpec", "spec.size < 0"}},
			nil, "False", "BadSpec", "Stalled: spec.size < 0"},
		{"unknown beats true", []mark{{"A", "True", "Ok", ""}, {"B", "Unknown", "Probing", "probing"}},
			[]conditions.SummaryOption{conditions.SummaryOptions{ConditionTypes: []string{"A", "B"}}}, "Unknown", "Probing", "B: probing"},
		{"false beats unknown", []mark{{"A", "Unknown", "Probing", ""}, {"B", "False", "Broken", ""}},
			[]conditions.SummaryOption{conditions.SummaryOptions{ConditionTypes: []string{"A", "B"}}}, "False", "Broken", "B: Broken"},
		{"missing is unknown", []mark{{"A", "True", "Ok", ""}},
			[]conditions.SummaryOption{conditions.SummaryOptions{ConditionTypes: []string{"A", "B"}}}, "Unknown", conditions.ReasonConditionMissing, "B: not reported yet"},
		{"missing can be ignored (two options merge)", []mark{{"A", "True", "Ok", ""}},
			[]conditions.SummaryOption{conditions.SummaryOptions{ConditionTypes: []string{"A", "B"}}, conditions.SummaryOptions{IgnoreIfMissing: []string{"B"}}}, "True", "Succeeded", ""},
		{"no types means all but the target", []mark{{"A", "True", "Ok", ""}, {"Ready", "False", "Old", ""}},
			nil, "True", "Succeeded", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := widget(1)
			for _, m := range tc.marks {
				conditions.Set(w, metav1.Condition{Type: m.typ, Status: m.status, Reason: m.reason, Message: m.msg})
			}
			conditions.SetSummary(w, "Ready", tc.opts...)
			got := conditions.Get(w, "Ready")
			if got.Status != tc.wantStatus || got.Reason != tc.wantReason || got.Message != tc.wantMsg {
				t.Errorf("Ready = %s/%s/%q, want %s/%s/%q", got.Status, got.Reason, got.Message, tc.wantStatus, tc.wantReason, tc.wantMsg)
			}
			if conditions.SetSummary(w, "Ready", tc.opts...) {
				t.Error("setting the same summary again reported a change")
			}
		})
	}
}

func TestKstatusConditions(t *testing.T) {
	w := widget(1)
	conditions.MarkStalled(w, "BadSpec", "")
	if !conditions.IsTrue(w, conditions.Stalled) || conditions.Get(w, conditions.Reconciling) != nil {
		t.Fatalf("after MarkStalled: %v", w.Status.Conditions)
	}
	conditions.MarkReconciling(w, "Progressing", "creating %d pods", 3)
	if !conditions.IsTrue(w, conditions.Reconciling) || conditions.Get(w, conditions.Stalled) != nil {
		t.Fatalf("after MarkReconciling: %v", w.Status.Conditions)
	}
	if conditions.MarkReconciling(w, "Progressing", "creating %d pods", 3) {
		t.Error("the same MarkReconciling twice reported a change")
	}
	if !conditions.ClearProgress(w) || len(w.Status.Conditions) != 0 {
		t.Fatalf("after ClearProgress: %v", w.Status.Conditions)
	}
	if conditions.ClearProgress(w) {
		t.Error("ClearProgress on a clean object reported a change")
	}
}

func TestUnstructuredShapes(t *testing.T) {
	valid := map[string]any{"type": "Ready", "status": "True", "reason": "Ok", "message": "", "lastTransitionTime": "2026-01-02T03:04:05Z"}
	for _, tc := range []struct {
		name      string
		status    any
		wantField string
	}{
		{"status is a string", "oops", "status"},
		{"conditions is a map", map[string]any{"conditions": map[string]any{"type": "Ready"}}, "status.conditions"},
		{"item is a string", map[string]any{"conditions": []any{"Ready"}}, "status.conditions"},
		{"status value is bad", map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "Yes"}}}, "status.conditions"},
		{"type is missing", map[string]any{"conditions": []any{map[string]any{"status": "True"}}}, "status.conditions"},
		{"type is a number", map[string]any{"conditions": []any{map[string]any{"type": int64(3), "status": "True"}}}, "status.conditions"},
		{"type repeats", map[string]any{"conditions": []any{valid, valid}}, "status.conditions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{"kind": "Widget", "metadata": map[string]any{"name": "w", "namespace": "ns"}, "status": tc.status}}
			before := u.DeepCopy()
			_, err := conditions.ForUnstructured(u)
			var fe *conditions.FieldError
			if !errorsAs(err, &fe) {
				t.Fatalf("error = %v, want *FieldError", err)
			}
			if fe.Field != tc.wantField || fe.Object != "Widget ns/w" {
				t.Errorf("FieldError names %q field %q", fe.Object, fe.Field)
			}
			if !equality.Semantic.DeepEqual(before, u) {
				t.Error("a failed ForUnstructured changed the object")
			}
		})
	}

	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "w", "generation": int64(4)},
		"status": map[string]any{"phase": "Running", "conditions": []any{valid}}}}
	s, err := conditions.ForUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	if !conditions.IsTrue(s, "Ready") {
		t.Error("existing Ready not read")
	}
	conditions.MarkFalse(s, "Synced", "Failed", "boom")
	again, err := conditions.ForUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	c := conditions.Get(again, "Synced")
	if c == nil || c.Status != metav1.ConditionFalse || c.ObservedGeneration != 4 || c.Message != "boom" {
		t.Errorf("Synced read back from the object = %+v", c)
	}
	if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase != "Running" {
		t.Errorf("status.phase lost: %q", phase)
	}
}

// TestRoundTripThroughAPIServer writes marked conditions through the status
// subresource and shows that the object read back is deep-equal after
// marking the same state again, so a patch helper would write nothing.
func TestRoundTripThroughAPIServer(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rt"}, Spec: testapi.WidgetSpec{Size: 1}}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	mark := func(w *testapi.Widget) bool {
		a := conditions.MarkTrue(w, "DatabaseReady", "Provisioned", "")
		b := conditions.MarkFalse(w, "BackupReady", "BucketMissing", "bucket %q not found", "b1")
		c := conditions.SetSummary(w, conditions.Ready, conditions.SummaryOptions{ConditionTypes: []string{"DatabaseReady", "BackupReady"}})
		return a || b || c
	}
	mark(w)
	if err := env.Client.Status().Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	var got testapi.Widget
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), &got); err != nil {
		t.Fatal(err)
	}
	fetched := got.DeepCopy()
	if mark(&got) {
		t.Errorf("marking the stored state again reported a change")
	}
	if !equality.Semantic.DeepEqual(fetched, &got) {
		t.Errorf("marking the stored state again changed the object:\n%+v\n%+v", fetched.Status.Conditions, got.Status.Conditions)
	}
	if r := conditions.Get(&got, conditions.Ready); r.Reason != "BucketMissing" || r.ObservedGeneration != got.Generation {
		t.Errorf("Ready = %+v", r)
	}
}

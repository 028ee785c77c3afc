package observe

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// The counting and the log lines are pure logic: a fake client serves.
func TestCountsAndLogsWrites(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Data: map[string]string{"k": "v"}}
	base := fake.NewClientBuilder().WithObjects(cm.DeepCopy()).Build()
	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 1})
	ctx := logf.IntoContext(context.Background(), log)
	c := Client(base, "testhelper")

	getBefore := testutil.ToFloat64(Requests.WithLabelValues("testhelper", "get", "", "false"))
	patchBefore := testutil.ToFloat64(Requests.WithLabelValues("testhelper", "patch", "", "false"))
	dryBefore := testutil.ToFloat64(Requests.WithLabelValues("testhelper", "patch", "", "true"))

	var got corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
		t.Fatal(err)
	}
	before := got.DeepCopy()
	got.Labels = map[string]string{"x": "y"}
	if err := c.Patch(ctx, &got, client.MergeFrom(before), client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	if err := c.Patch(ctx, &got, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		t.Fatal(err)
	}
	if d := testutil.ToFloat64(Requests.WithLabelValues("testhelper", "get", "", "false")) - getBefore; d != 1 {
		t.Errorf("get counted %v times, want 1", d)
	}
	if d := testutil.ToFloat64(Requests.WithLabelValues("testhelper", "patch", "", "false")) - patchBefore; d != 1 {
		t.Errorf("patch counted %v times, want 1", d)
	}
	if d := testutil.ToFloat64(Requests.WithLabelValues("testhelper", "patch", "", "true")) - dryBefore; d != 1 {
		t.Errorf("dry-run patch counted %v times, want 1", d)
	}
	if len(lines) != 1 {
		t.Fatalf("want one logged write (dry runs and reads are not logged), got %q", lines)
	}
	for _, want := range []string{`"helper"="testhelper"`, `"ConfigMap"={"name"="a" "namespace"="ns"}`, `"changed"=["metadata"]`} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("log line %q lacks %s", lines[0], want)
		}
	}

	// A status-only change with a lock: the precondition is not a metadata change.
	before = got.DeepCopy()
	got.Data["k"] = "w"
	lines = nil
	if err := c.Patch(ctx, &got, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		t.Fatal(err)
	}
	if len(lines) != 1 || !strings.Contains(lines[0], `"changed"=["data"]`) {
		t.Errorf("log = %q, want changed=[data] only", lines)
	}
}

// A failed write is logged through log.Error, with the error, and counted.
func TestFailedWriteIsAnErrorLine(t *testing.T) {
	base := fake.NewClientBuilder().Build() // the ConfigMap does not exist: the update fails
	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 1})
	ctx := logf.IntoContext(context.Background(), log)
	c := Client(base, "failhelper")
	before := testutil.ToFloat64(Requests.WithLabelValues("failhelper", "update", "status", "false"))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gone"}}
	if err := c.Status().Update(ctx, cm); err == nil {
		t.Fatal("the update of a missing object succeeded")
	}
	if d := testutil.ToFloat64(Requests.WithLabelValues("failhelper", "update", "status", "false")) - before; d != 1 {
		t.Errorf("status update counted %v times, want 1", d)
	}
	if len(lines) != 1 || !strings.Contains(lines[0], `"msg"="steady: status update failed"`) || !strings.Contains(lines[0], `"error"=`) ||
		!strings.Contains(lines[0], `"ConfigMap"={"name"="gone" "namespace"="ns"}`) {
		t.Errorf("log = %q, want one error line naming the ConfigMap", lines)
	}
}

// A write with a nil context (which Go asks callers never to pass, but
// logf.FromContext, which the write log was first looked up with, takes)
// returns the client's answer: the log lookup does not panic.
func TestNilContextWriteDoesNotPanic(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nilctx"}}
	c := Client(fake.NewClientBuilder().Build(), "nilctxhelper")
	var nilCtx context.Context
	if err := c.Create(nilCtx, cm); err != nil {
		t.Fatal(err)
	}
	before := cm.DeepCopy()
	cm.Labels = map[string]string{"a": "b"}
	if err := c.Patch(nilCtx, cm, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	// The fake client keeps no status of a ConfigMap: an error, logged.
	if err := c.Status().Update(nilCtx, cm); err == nil {
		t.Fatal("a status update the fake client cannot do succeeded")
	}
}

// A context without a logger logs on controller-runtime's root logger,
// also when log.SetLogger is called after the client was made and used.
func TestRootLoggerWhenTheContextHasNone(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "root"}}
	c := Client(fake.NewClientBuilder().Build(), "roothelper")
	ctx := context.Background()
	if err := c.Create(ctx, cm); err != nil { // before SetLogger: nowhere
		t.Fatal(err)
	}
	var mu sync.Mutex // the root logger outlives the test
	var lines []string
	logf.SetLogger(funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{Verbosity: 1}))
	before := cm.DeepCopy()
	cm.Labels = map[string]string{"a": "b"}
	if err := c.Patch(ctx, cm, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lines) != 1 || !strings.Contains(lines[0], `"msg"="steady: patch"`) || !strings.Contains(lines[0], `"changed"=["metadata"]`) ||
		!strings.Contains(lines[0], `"ConfigMap"={"name"="root" "namespace"="ns"}`) {
		t.Errorf("root log = %q, want the patch of metadata", lines)
	}
}

// TestCountsEveryVerb: each verb and subresource is counted under its
// labels, dry runs apart, and two wrappers of one helper count on the same
// counters.
func TestCountsEveryVerb(t *testing.T) {
	for _, verb := range countedVerbs {
		for _, sub := range []string{"", "status"} {
			for _, dry := range []bool{false, true} {
				labels := []string{"counthelper", verb, sub, "false"}
				if dry {
					labels[3] = "true"
				}
				before := testutil.ToFloat64(Requests.WithLabelValues(labels...))
				countsOf("counthelper").count(verb, sub, dry)
				Client(fake.NewClientBuilder().Build(), "counthelper").(*observed).counts.count(verb, sub, dry)
				if d := testutil.ToFloat64(Requests.WithLabelValues(labels...)) - before; d != 2 {
					t.Errorf("%v counted %v times, want 2", labels, d)
				}
			}
		}
	}
}

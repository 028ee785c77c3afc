package cachewait_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadyk8s/steady/cachewait"
	"github.com/steadyk8s/steady/internal/testapi"
)

// TestTrackerForget: an owner whose child's write the cache has not shown
// yet is not caught up; Forget drops what was recorded for it (the owner
// was deleted, say), after which it is caught up at once; another owner's
// record is kept. The cache is held 3 s behind, far longer than the test takes.
func TestTrackerForget(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startManager(t, 3*time.Second)
	tr := cachewait.NewTracker(cc.Manager)
	ns := env.Namespace(t)
	a := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a", UID: "uid-a"}}
	b := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b", UID: "uid-b"}}
	for _, o := range []*testapi.Widget{a, b} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child-" + o.Name}}
		if err := env.Client.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		tr.Wrote(o, cm)
	}
	for _, o := range []*testapi.Widget{a, b} {
		if ok, err := tr.CaughtUp(ctx, o); ok || err != nil {
			t.Fatalf("%s: caught up %v, %v before the cache shows its child", o.Name, ok, err)
		}
	}
	tr.Forget(a)
	if ok, err := tr.CaughtUp(ctx, a); !ok || err != nil {
		t.Errorf("a after Forget: caught up %v, %v; want true", ok, err)
	}
	if ok, err := tr.CaughtUp(ctx, b); ok || err != nil {
		t.Errorf("b: caught up %v, %v after a was forgotten; want false, its child still unseen", ok, err)
	}
}

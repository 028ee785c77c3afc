package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// The rules for "what the reconcile computed is older than the live
// object", one test each, through a manager's cached client held back
// where the staleness comes from a lagging cache.

// A reconcile that wrote Ready=False is followed at once by one that
// computes Ready=True from a cache that does not hold the first write yet:
// For reads its own writes, so the correction is written (the cached copy
// still says True, against which "nothing changed").
func TestForReadsItsOwnWrites(t *testing.T) {
	env.Require(t)
	for _, withAPIReader := range []bool{true, false} {
		t.Run(fmt.Sprintf("api reader %v", withAPIReader), func(t *testing.T) {
			cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 500 * time.Millisecond, Informers: []client.Object{&testapi.Widget{}}})
			ctx := context.Background()
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
			must(t, env.Client.Create(ctx, w))
			conditions.MarkTrue(w, conditions.Ready, "Applied", "")
			must(t, env.Client.Status().Update(ctx, w))
			waitCached(t, cc.Client, w, w.ResourceVersion)

			healthy := false
			c := cc.CacheOnly
			if withAPIReader {
				c = cc.Client
			}
			r, err := reconcile.For(c, func(ctx context.Context, w *testapi.Widget) (ctrl.Result, error) {
				if healthy {
					conditions.MarkTrue(w, conditions.Ready, "Applied", "")
				} else {
					conditions.MarkFalse(w, conditions.Ready, "ApplyFailed", "already exists")
				}
				return ctrl.Result{}, nil
			})
			must(t, err)
			req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}
			if _, err := r.Reconcile(ctx, req); err != nil {
				t.Fatal(err)
			}
			if conditions.IsTrue(get(t, w), conditions.Ready) {
				t.Fatal("the first reconcile did not write Ready=False")
			}
			healthy = true
			cc.Counter.Reset()
			res, err := r.Reconcile(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if got := get(t, w); !conditions.IsTrue(got, conditions.Ready) {
				t.Errorf("Ready = %+v after a reconcile that computed True (result %+v): the correction was never written",
					conditions.Get(got, conditions.Ready), res)
			}
			t.Logf("second reconcile: %s", cc.Counter)
		})
	}
}

// The Patcher alone, from a cached copy older than its own write: it never
// concludes "no change"; it writes nothing and says so with a *StaleError.
func TestPatchFromBehindOurOwnWriteIsStale(t *testing.T) {
	env.Require(t)
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 500 * time.Millisecond, Informers: []client.Object{&testapi.Widget{}}})
	ctx := context.Background()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
	must(t, env.Client.Create(ctx, w))
	conditions.MarkTrue(w, conditions.Ready, "Applied", "")
	must(t, env.Client.Status().Update(ctx, w))
	waitCached(t, cc.Client, w, w.ResourceVersion)

	first := &testapi.Widget{}
	must(t, cc.Client.Get(ctx, client.ObjectKeyFromObject(w), first))
	p, _ := reconcile.NewPatcher(cc.Client, first)
	conditions.MarkFalse(first, conditions.Ready, "ApplyFailed", "")
	must(t, p.Patch(ctx, first))

	stale := &testapi.Widget{}
	must(t, cc.Client.Get(ctx, client.ObjectKeyFromObject(w), stale))
	if !conditions.IsTrue(stale, conditions.Ready) {
		t.Fatal("the cache already holds the write; the test needs it not to")
	}
	p, _ = reconcile.NewPatcher(cc.Client, stale)
	conditions.MarkTrue(stale, conditions.Ready, "Applied", "")
	err := p.Patch(ctx, stale)
	var se *reconcile.StaleError
	if !errors.As(err, &se) || len(se.Written) != 0 || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("Patch from behind our own write = %v, want a *StaleError that wrote nothing", err)
	}
	if got := get(t, w); got.ResourceVersion != first.ResourceVersion {
		t.Errorf("written: resourceVersion %s, want %s", got.ResourceVersion, first.ResourceVersion)
	}
}

// A reconcile reads generation 1 from a lagging cache while the live object
// is at generation 3 with everything observed at 3: its status is not
// written over (observedGeneration never goes back), and For requeues.
func TestObservedGenerationNeverGoesBackwards(t *testing.T) {
	env.Require(t)
	for _, withAPIReader := range []bool{true, false} {
		t.Run(fmt.Sprintf("api reader %v", withAPIReader), func(t *testing.T) {
			cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: time.Second, Informers: []client.Object{&testapi.Widget{}}})
			ctx := context.Background()
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}, Spec: testapi.WidgetSpec{Size: 1}}
			must(t, env.Client.Create(ctx, w))
			waitCached(t, cc.Client, w, w.ResourceVersion)

			// Another replica reconciled generations 2 and 3 meanwhile.
			for size := 2; size <= 3; size++ {
				w.Spec.Size = size
				must(t, env.Client.Update(ctx, w))
			}
			w.Status.ObservedGeneration = w.Generation
			conditions.MarkTrue(w, conditions.Ready, "Done", "")
			must(t, env.Client.Status().Update(ctx, w))
			if w.Generation != 3 || conditions.Get(w, conditions.Ready).ObservedGeneration != 3 {
				t.Fatalf("setup: generation %d, Ready %+v", w.Generation, conditions.Get(w, conditions.Ready))
			}

			c := cc.CacheOnly
			if withAPIReader {
				c = cc.Client
			}
			seen := int64(0)
			r, err := reconcile.For(c, func(ctx context.Context, w *testapi.Widget) (ctrl.Result, error) {
				seen = w.Generation
				conditions.MarkTrue(w, conditions.Ready, "Done", "")
				return ctrl.Result{}, nil
			}, reconcile.WithObservedGeneration{})
			must(t, err)
			res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)})
			if seen != 1 {
				t.Fatalf("the reconcile saw generation %d; the test needs the lagging cache's 1", seen)
			}
			if err != nil || res.RequeueAfter == 0 {
				t.Errorf("reconcile = %+v, %v; want a requeue without error", res, err)
			}
			got := get(t, w)
			if got.Status.ObservedGeneration != 3 || conditions.Get(got, conditions.Ready).ObservedGeneration != 3 {
				t.Errorf("status.observedGeneration %d, Ready's %d: written back from 3",
					got.Status.ObservedGeneration, conditions.Get(got, conditions.Ready).ObservedGeneration)
			}
		})
	}
}

// A status computed from an older generation, where nothing live claims a
// newer one, is written as what it is: observedGeneration stays the
// generation it was computed from (never the live one it did not see).
func TestStatusOfAnOlderGenerationSaysSo(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	w, c, _ := fixture(t)
	p, _ := reconcile.NewPatcher(c, w)
	other := get(t, w)
	other.Spec.Color = "green"
	must(t, env.Client.Update(ctx, other))
	w.Status.Phase = "Done"
	conditions.MarkTrue(w, conditions.Ready, "Done", "")
	must(t, p.Patch(ctx, w, reconcile.WithObservedGeneration{}))
	got := get(t, w)
	if got.Generation != 2 || got.Status.ObservedGeneration != 1 || conditions.Get(got, conditions.Ready).ObservedGeneration != 1 || got.Status.Phase != "Done" {
		t.Errorf("generation %d, observedGeneration %d, Ready %+v, phase %q", got.Generation, got.Status.ObservedGeneration,
			conditions.Get(got, conditions.Ready), got.Status.Phase)
	}
}

// A reconcile that read the object before its conditions were written
// marks them True again; the status write conflicts and is rebased: the
// conditions did not flip, so their lastTransitionTime stays, and an entry
// equal to the live one but for that time is no change: nothing is sent.
func TestLastTransitionTimeMovesOnlyOnAFlip(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	w, c, n := fixture(t)
	stale := w.DeepCopy()
	then := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	for _, typ := range []string{"Available", conditions.Ready} {
		conditions.Set(w, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "Done", LastTransitionTime: then})
	}
	must(t, env.Client.Status().Update(ctx, w))
	rv := w.ResourceVersion

	p, _ := reconcile.NewPatcher(c, stale)
	conditions.MarkTrue(stale, "Available", "Done", "")
	conditions.MarkTrue(stale, conditions.Ready, "Done", "")
	must(t, p.Patch(ctx, stale))
	got := get(t, w)
	for _, typ := range []string{"Available", conditions.Ready} {
		if c := conditions.Get(got, typ); !c.LastTransitionTime.Equal(&then) {
			t.Errorf("%s lastTransitionTime %s, want %s: moved without a flip", typ, c.LastTransitionTime, then)
		}
	}
	if got.ResourceVersion != rv {
		t.Errorf("written (resourceVersion %s -> %s): an entry equal but for its time is no change; requests %s", rv, got.ResourceVersion, n)
	}
}

// The caller's condition order is written, rebased or not; an entry only
// another writer has keeps its place after the entry before it.
func TestConditionOrderIsTheCallers(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	t.Run("mark it ready and sort conditions", func(t *testing.T) {
		w, c, _ := fixture(t)
		p, _ := reconcile.NewPatcher(c, w)
		conditions.MarkTrue(w, conditions.Ready, "Done", "")
		must(t, p.Patch(ctx, w))
		conditions.MarkTrue(w, "Available", "Done", "") // sorted first by conditions
		if types := condTypes(w.Status.Conditions); types[0] != "Available" {
			t.Fatalf("in memory %v", types)
		}
		must(t, p.Patch(ctx, w))
		if got, want := condTypes(get(t, w).Status.Conditions), condTypes(w.Status.Conditions); !slices.Equal(got, want) {
			t.Errorf("stored %v, want the caller's %v", got, want)
		}
	})
	t.Run("no conflict", func(t *testing.T) {
		w, c, _ := fixture(t)
		w.Status.Conditions = nil
		for _, typ := range []string{conditions.Ready, "Zeta"} {
			conditions.Set(w, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "R"})
		}
		must(t, env.Client.Status().Update(ctx, w))
		p, _ := reconcile.NewPatcher(c, w)
		w.Status.Conditions = append([]metav1.Condition{cond("Available")}, w.Status.Conditions[0], cond("Beta"), w.Status.Conditions[1])
		must(t, p.Patch(ctx, w))
		if got := condTypes(get(t, w).Status.Conditions); !slices.Equal(got, []string{"Available", "Ready", "Beta", "Zeta"}) {
			t.Errorf("stored %v, want [Available Ready Beta Zeta]", got)
		}
	})
	t.Run("another writer's entry keeps its place", func(t *testing.T) {
		w, c, _ := fixture(t)
		w.Status.Conditions = []metav1.Condition{cond(conditions.Ready), cond("Zeta")}
		must(t, env.Client.Status().Update(ctx, w))
		p, _ := reconcile.NewPatcher(c, w)
		other := get(t, w)
		other.Status.Conditions = slices.Insert(other.Status.Conditions, 1, cond("Theirs"))
		must(t, env.Client.Status().Update(ctx, other))
		w.Status.Conditions = []metav1.Condition{cond("Available"), w.Status.Conditions[0], cond("Beta"), w.Status.Conditions[1]}
		must(t, p.Patch(ctx, w))
		if got := condTypes(get(t, w).Status.Conditions); !slices.Equal(got, []string{"Available", "Ready", "Theirs", "Beta", "Zeta"}) {
			t.Errorf("stored %v, want [Available Ready Theirs Beta Zeta]", got)
		}
	})
}

// WithOwnedConditions: our value wins on a conflict even where this
// reconcile did not change the list (it restated Ready=True and changed
// another status field).
func TestOwnedConditionsWinWithoutAListChange(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	w, c, _ := fixture(t)
	conditions.MarkTrue(w, conditions.Ready, "Ours", "")
	must(t, env.Client.Status().Update(ctx, w))
	p, _ := reconcile.NewPatcher(c, w)
	other := get(t, w)
	conditions.MarkFalse(other, conditions.Ready, "Theirs", "")
	must(t, env.Client.Status().Update(ctx, other))
	conditions.MarkTrue(w, conditions.Ready, "Ours", "")
	w.Status.Phase = "Changed"
	must(t, p.Patch(ctx, w, reconcile.WithOwnedConditions{conditions.Ready}))
	got := get(t, w)
	if r := conditions.Get(got, conditions.Ready); r.Reason != "Ours" || got.Status.Phase != "Changed" {
		t.Errorf("Ready %+v, phase %q: the owned condition did not win", r, got.Status.Phase)
	}
}

// WithEvents judges the Ready flip against the state the status write was
// rebased on: a reconcile from a copy older than Ready=True that restates
// it records no second "Ready" Event.
func TestEventsJudgeTheFlipAgainstTheLiveState(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	w, c, _ := fixture(t)
	conditions.MarkFalse(w, conditions.Ready, "Waiting", "")
	must(t, env.Client.Status().Update(ctx, w))
	stale := get(t, w)
	conditions.MarkTrue(w, conditions.Ready, "Up", "") // an earlier reconcile's flip
	must(t, env.Client.Status().Update(ctx, w))

	rec := record.NewFakeRecorder(10)
	p, _ := reconcile.NewPatcher(c, stale)
	conditions.MarkTrue(stale, conditions.Ready, "Up", "")
	stale.Status.Phase = "Again"
	must(t, p.Patch(ctx, stale, reconcile.WithEvents{Recorder: rec}))
	if get(t, w).Status.Phase != "Again" {
		t.Fatal("status not written; the test needs it to be")
	}
	select {
	case e := <-rec.Events:
		t.Errorf("event %q: Ready was already True on the object the write was rebased on", e)
	default:
	}
}

// Dropping a whole map (cm.Data = nil) removes the keys we read, never a
// key another writer added since; with no such key the map goes whole.
func TestDroppingAMapKeepsKeysWeNeverRead(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n, err := testapi.NewCountingClient(env.Config, env.Scheme)
	must(t, err)
	for _, foreign := range []bool{true, false} {
		t.Run(fmt.Sprintf("another writer's key %v", foreign), func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "cm"},
				Data: map[string]string{"a": "1", "b": "2"}}
			must(t, env.Client.Create(ctx, cm))
			p, _ := reconcile.NewPatcher(c, cm)
			if foreign {
				other := cm.DeepCopy()
				other.Data["theirs"] = "3"
				must(t, env.Client.Update(ctx, other))
			}
			n.Reset()
			cm.Data = nil
			must(t, p.Patch(ctx, cm))
			got := &corev1.ConfigMap{}
			must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(cm), got))
			want := map[string]string{}
			if foreign {
				want["theirs"] = "3"
			}
			if len(got.Data) != len(want) || got.Data["theirs"] != want["theirs"] {
				t.Errorf("data %v, want %v", got.Data, want)
			}
			t.Logf("requests: %s", n)
		})
	}
}

// A write whose answer leaves its outcome open (a server timeout, a 500, a
// gateway error) is reported Unsure, "may itself have been applied"; an
// answer that says it was refused is not.
func TestUnsureWhereTheOutcomeIsUnknown(t *testing.T) {
	env.Require(t)
	for _, tc := range []struct {
		name   string
		err    error
		unsure bool
	}{
		{"server timeout 504", apierrors.NewTimeoutError("the request timed out", 0), true},
		{"server timeout 500", apierrors.NewServerTimeout(schema.GroupResource{Resource: "widgets"}, "patch", 0), true},
		{"internal error", apierrors.NewInternalError(errors.New("etcd leader changed")), true},
		{"bad gateway", apierrors.NewGenericServerResponse(http.StatusBadGateway, "PATCH", schema.GroupResource{Resource: "widgets"}, "w", "", 0, true), true},
		{"dropped connection", errors.New("http2: client connection lost"), true},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), false},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "Widget"}, "w", nil), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, _, _ := fixture(t)
			ww, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
			must(t, err)
			c := interceptor.NewClient(ww, interceptor.Funcs{
				SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
					if tc.unsure { // the write landed, the answer was lost
						if err := c.SubResource(sub).Patch(ctx, obj, patch, opts...); err != nil {
							return err
						}
					}
					return tc.err
				},
			})
			p, _ := reconcile.NewPatcher(c, w)
			w.Status.Phase = "Landed"
			err = p.Patch(context.Background(), w)
			var pe *reconcile.PatchError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v", err)
			}
			if pe.Unsure != tc.unsure || strings.Contains(err.Error(), "may itself have been applied") != tc.unsure {
				t.Errorf("Unsure %v, err %q; want Unsure %v", pe.Unsure, err, tc.unsure)
			}
		})
	}
}

func cond(typ string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "R", LastTransitionTime: metav1.Now()}
}

func condTypes(cs []metav1.Condition) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Type)
	}
	return out
}

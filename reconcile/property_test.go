package reconcile_test

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// TestPropertyConcurrentWriterLosesNothing interleaves another writer's
// changes (foreign conditions of arbitrary shape, finalizers,
// ownerReferences, labels, status and spec fields) at random points of our
// Patch (before it, or before any of its requests, retries included) with
// random changes of ours: nothing the other wrote is lost, and everything we
// changed lands.
func TestPropertyConcurrentWriterLosesNothing(t *testing.T) {
	env.Require(t)
	rng := seededRand(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	const rounds = 40
	for round := range rounds {
		name := fmt.Sprintf("t%d", round)
		base := newUnstructured("Thing", ns, name)
		base.SetLabels(map[string]string{"base": "1"})
		base.SetFinalizers([]string{"base.io/f"})
		base.Object["metadata"].(map[string]any)["ownerReferences"] = []any{ownerRef("base", 0)}
		base.Object["spec"] = map[string]any{"size": int64(1)}
		u := createU(t, base)
		u = writeStatus(t, u, map[string]any{"phase": "New", "conditions": []any{
			map[string]any{"type": "Base", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z", "extra": "x"},
		}})

		// The other writer's ops, applied at random points.
		var theirs []func(u *unstructured.Unstructured)
		var planned []func(got *unstructured.Unstructured) error
		var checks []func(got *unstructured.Unstructured) error // of the ops applied
		for i := range 1 + rng.Intn(3) {
			k := fmt.Sprintf("%d-%d", round, i)
			switch rng.Intn(5) {
			case 0:
				cond := randomCondition(rng, "Their"+k)
				theirs = append(theirs, func(u *unstructured.Unstructured) { appendNested(u, cond, "status", "conditions") })
				planned = append(planned, hasEntry(cond, "status", "conditions"))
			case 1:
				f := "their.io/f" + k
				theirs = append(theirs, func(u *unstructured.Unstructured) { u.SetFinalizers(append(u.GetFinalizers(), f)) })
				planned = append(planned, func(got *unstructured.Unstructured) error {
					if !slices.Contains(got.GetFinalizers(), f) {
						return fmt.Errorf("finalizer %s lost", f)
					}
					return nil
				})
			case 2:
				ref := ownerRef("their"+k, round*10+i+1)
				theirs = append(theirs, func(u *unstructured.Unstructured) { appendNested(u, ref, "metadata", "ownerReferences") })
				planned = append(planned, hasEntry(ref, "metadata", "ownerReferences"))
			case 3:
				theirs = append(theirs, func(u *unstructured.Unstructured) {
					l := u.GetLabels()
					l["their-"+k] = "v"
					u.SetLabels(l)
				})
				planned = append(planned, func(got *unstructured.Unstructured) error {
					if got.GetLabels()["their-"+k] != "v" {
						return fmt.Errorf("label their-%s lost", k)
					}
					return nil
				})
			case 4:
				theirs = append(theirs, func(u *unstructured.Unstructured) {
					_ = unstructured.SetNestedField(u.Object, "v", "status", "their-"+k)
					_ = unstructured.SetNestedField(u.Object, "v", "spec", "their-"+k)
				})
				planned = append(planned, func(got *unstructured.Unstructured) error {
					s, _, _ := unstructured.NestedString(got.Object, "status", "their-"+k)
					sp, _, _ := unstructured.NestedString(got.Object, "spec", "their-"+k)
					if s != "v" || sp != "v" {
						return fmt.Errorf("fields their-%s lost", k)
					}
					return nil
				})
			}
		}
		// When each op happens: before our request number at[i] (0: before Patch).
		at := make([]int, len(theirs))
		for i := range at {
			at[i] = rng.Intn(4)
		}
		calls := 0
		foreign := func(ctx context.Context) error {
			for i, op := range theirs {
				if at[i] != calls {
					continue
				}
				cur := getU(t, u)
				op(cur)
				if err := env.Client.Update(ctx, cur); err != nil {
					return err
				}
				cur = getU(t, u)
				op(cur)
				if err := env.Client.Status().Update(ctx, cur); err != nil {
					return err
				}
				checks = append(checks, planned[i])
			}
			return nil
		}
		ww, _ := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
		c := interceptor.NewClient(ww, interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				calls++
				if err := foreign(ctx); err != nil {
					return err
				}
				return c.Patch(ctx, obj, patch, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				calls++
				if err := foreign(ctx); err != nil {
					return err
				}
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		})

		p, err := reconcile.NewPatcher(c, u)
		if err != nil {
			t.Fatal(err)
		}
		if err := foreign(ctx); err != nil { // at 0: between our read and Patch
			t.Fatal(err)
		}
		// Our random changes, and what must hold after.
		var ours []func(got *unstructured.Unstructured) error
		var did []string
		for op := range 9 {
			if rng.Intn(3) != 0 || (op == 5 && slices.Contains(did, "4")) {
				continue
			}
			did = append(did, fmt.Sprint(op))
			switch op {
			case 0:
				l := u.GetLabels()
				l["ours"] = "1"
				delete(l, "base")
				u.SetLabels(l)
				ours = append(ours, func(got *unstructured.Unstructured) error {
					if l := got.GetLabels(); l["ours"] != "1" || l["base"] != "" {
						return fmt.Errorf("labels %v", l)
					}
					return nil
				})
			case 1:
				u.SetFinalizers([]string{"our.io/f"}) // base.io/f removed, ours added
				ours = append(ours, func(got *unstructured.Unstructured) error {
					if f := got.GetFinalizers(); slices.Contains(f, "base.io/f") || !slices.Contains(f, "our.io/f") {
						return fmt.Errorf("finalizers %v", f)
					}
					return nil
				})
			case 2:
				u.Object["metadata"].(map[string]any)["ownerReferences"] = []any{ownerRef("ours", 999)}
				ours = append(ours, func(got *unstructured.Unstructured) error {
					refs, _, _ := unstructured.NestedSlice(got.Object, "metadata", "ownerReferences")
					if !slices.ContainsFunc(refs, func(r any) bool { return r.(map[string]any)["name"] == "ours" }) ||
						slices.ContainsFunc(refs, func(r any) bool { return r.(map[string]any)["name"] == "base" }) {
						return fmt.Errorf("ownerReferences %s", mustJSON(refs))
					}
					return nil
				})
			case 3:
				cond := randomCondition(rng, "Ours")
				appendNested(u, cond, "status", "conditions")
				ours = append(ours, hasEntry(cond, "status", "conditions"))
			case 4:
				conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
				conds[0].(map[string]any)["extra"] = "changed"
				_ = unstructured.SetNestedSlice(u.Object, conds, "status", "conditions")
				ours = append(ours, func(got *unstructured.Unstructured) error {
					conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
					for _, c := range conds {
						if c.(map[string]any)["type"] == "Base" && c.(map[string]any)["extra"] == "changed" {
							return nil
						}
					}
					return fmt.Errorf("Base's change lost: %s", mustJSON(conds))
				})
			case 5:
				conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
				conds = slices.DeleteFunc(conds, func(c any) bool { return c.(map[string]any)["type"] == "Base" })
				_ = unstructured.SetNestedSlice(u.Object, conds, "status", "conditions")
				ours = append(ours, func(got *unstructured.Unstructured) error {
					conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
					if slices.ContainsFunc(conds, func(c any) bool { return c.(map[string]any)["type"] == "Base" }) {
						return fmt.Errorf("Base not removed: %s", mustJSON(conds))
					}
					return nil
				})
			case 6:
				unstructured.RemoveNestedField(u.Object, "status", "phase")
				_ = unstructured.SetNestedField(u.Object, true, "status", "ours")
				ours = append(ours, func(got *unstructured.Unstructured) error {
					_, has, _ := unstructured.NestedString(got.Object, "status", "phase")
					b, _, _ := unstructured.NestedBool(got.Object, "status", "ours")
					if has || !b {
						return fmt.Errorf("status %s", mustJSON(got.Object["status"]))
					}
					return nil
				})
			case 7:
				_ = unstructured.SetNestedField(u.Object, int64(0), "spec", "size")
				ours = append(ours, func(got *unstructured.Unstructured) error {
					if s, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); s != 0 {
						return fmt.Errorf("spec.size %d", s)
					}
					return nil
				})
			case 8:
				_ = unstructured.SetNestedField(u.Object, "mine", "spec", "ours")
				ours = append(ours, func(got *unstructured.Unstructured) error {
					if s, _, _ := unstructured.NestedString(got.Object, "spec", "ours"); s != "mine" {
						return fmt.Errorf("spec.ours %q", s)
					}
					return nil
				})
			}
		}
		if err := p.Patch(ctx, u); err != nil {
			t.Fatalf("round %d (ours %v, theirs at %v): %v", round, did, at, err)
		}
		got := getU(t, u)
		for _, check := range append(checks, ours...) {
			if err := check(got); err != nil {
				t.Errorf("round %d (ours %v, theirs at %v, %d requests): %v", round, did, at, calls, err)
			}
		}
	}
}

func ownerRef(name string, n int) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": name,
		"uid": fmt.Sprintf("00000000-0000-0000-0000-%012d", n)}
}

// randomCondition is a condition of arbitrary shape: any mix of the fields
// of metav1.Condition, cluster-api's v1beta1, core types, and unknown ones.
func randomCondition(rng *rand.Rand, typ string) map[string]any {
	c := map[string]any{"type": typ, "status": []string{"True", "False", "Unknown"}[rng.Intn(3)]}
	optional := map[string]any{
		"lastTransitionTime": "2025-01-01T00:00:00Z", "lastUpdateTime": "2025-01-02T00:00:00Z",
		"lastProbeTime": "2025-01-03T00:00:00Z", "lastHeartbeatTime": "2025-01-04T00:00:00Z",
		"severity": "Warning", "reason": "R", "message": "m", "observedGeneration": int64(3),
		"custom": map[string]any{"nested": []any{"a", int64(1)}},
	}
	for k, v := range optional {
		if rng.Intn(2) == 0 {
			c[k] = v
		}
	}
	return c
}

func appendNested(u *unstructured.Unstructured, entry map[string]any, path ...string) {
	list, _, _ := unstructured.NestedSlice(u.Object, path...)
	_ = unstructured.SetNestedSlice(u.Object, append(list, entry), path...)
}

func hasEntry(entry map[string]any, path ...string) func(got *unstructured.Unstructured) error {
	return func(got *unstructured.Unstructured) error {
		list, _, _ := unstructured.NestedSlice(got.Object, path...)
		for _, e := range list {
			if mustJSON(e) == mustJSON(entry) {
				return nil
			}
		}
		return fmt.Errorf("%s: entry %s lost or changed: %s", path, mustJSON(entry), mustJSON(list))
	}
}

// Through a manager's lagging cache (no API reader, and with one), from a
// snapshot that is the cache's stale copy or the API server's fresh one,
// with another writer changing finalizers, conditions, labels and status
// at random just before our Patch: Patch succeeds, everything both wrote
// is stored.
func TestPropertyLaggingCacheLosesNothing(t *testing.T) {
	env.Require(t)
	rng := seededRand(t)
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 200 * time.Millisecond, Informers: []client.Object{&testapi.Widget{}}})
	ctx := context.Background()
	ns := env.Namespace(t)
	for round := range 10 {
		apiReader, fromCache := rng.Intn(2) == 0, rng.Intn(2) == 0
		t.Run(fmt.Sprintf("%d/api reader %v/cached snapshot %v", round, apiReader, fromCache), func(t *testing.T) {
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("w%d", round),
				Finalizers: []string{"base.io/f"}}}
			if err := env.Client.Create(ctx, w); err != nil {
				t.Fatal(err)
			}
			waitCached(t, cc.Client, w, w.ResourceVersion)
			// A first change the cache will not see for a while.
			first := get(t, w)
			conditions.MarkTrue(first, "Base", "Set", "")
			if err := env.Client.Status().Update(ctx, first); err != nil {
				t.Fatal(err)
			}
			obj := &testapi.Widget{}
			if fromCache {
				_ = cc.Client.Get(ctx, client.ObjectKeyFromObject(w), obj)
			} else {
				obj = get(t, w)
			}
			c := cc.CacheOnly
			if apiReader {
				c = cc.Client
			}
			p, _ := reconcile.NewPatcher(c, obj)
			// Ours.
			mine := rng.Intn(8) + 1
			if mine&1 != 0 {
				obj.Finalizers = append(obj.Finalizers, "mine.io/f")
			}
			if mine&2 != 0 {
				conditions.MarkTrue(obj, "Mine", "Set", "")
			}
			if mine&4 != 0 {
				obj.Status.Phase = "Mine"
				obj.Spec.Size = 5
			}
			if mine == 8 {
				obj.Labels = map[string]string{"mine": "1"}
			}
			// Theirs, meanwhile.
			theirs := rng.Intn(4)
			other := get(t, w)
			if theirs&1 != 0 {
				other.Finalizers = append(other.Finalizers, "their.io/f")
				other.Labels = map[string]string{"their": "1"}
				if err := env.Client.Update(ctx, other); err != nil {
					t.Fatal(err)
				}
				other = get(t, w)
			}
			if theirs&2 != 0 {
				conditions.MarkTrue(other, "Theirs", "Set", "")
				other.Status.Replicas = 3
				if err := env.Client.Status().Update(ctx, other); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.Patch(ctx, obj); err != nil {
				t.Fatalf("Patch: %v", err)
			}
			got := get(t, w)
			var lost []string
			check := func(ok bool, what string) {
				if !ok {
					lost = append(lost, what)
				}
			}
			check(slices.Contains(got.Finalizers, "base.io/f"), "base finalizer")
			check(conditions.IsTrue(got, "Base"), "Base condition")
			check(mine&1 == 0 || slices.Contains(got.Finalizers, "mine.io/f"), "our finalizer")
			check(mine&2 == 0 || conditions.IsTrue(got, "Mine"), "our condition")
			check(mine&4 == 0 || (got.Status.Phase == "Mine" && got.Spec.Size == 5), "our phase and size")
			check(mine != 8 || got.Labels["mine"] == "1", "our label")
			check(theirs&1 == 0 || (slices.Contains(got.Finalizers, "their.io/f") && got.Labels["their"] == "1"), "their finalizer and label")
			check(theirs&2 == 0 || (conditions.IsTrue(got, "Theirs") && got.Status.Replicas == 3), "their condition and replicas")
			if len(lost) > 0 {
				t.Errorf("mine %b, theirs %b: lost %v; stored %+v", mine, theirs, lost, got)
			}
		})
	}
	t.Logf("requests: %s", cc.Counter)
}

// seededRand returns a random source whose seed the test logs, so that a
// failing run can be repeated.
func seededRand(t *testing.T) *rand.Rand {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	return rand.New(rand.NewSource(seed))
}

package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steadyk8s/steady/finalizer"
	"github.com/steadyk8s/steady/internal/scope"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// TestPropertyOlderThanLive runs, on one Widget, reconciles of ours that
// start from snapshots of different ages (For and Patchers through a
// manager's cache held back 200 ms and steady.NewClient's API reader;
// Patchers from hand-kept old copies and from fresh reads), each writing our three
// conditions in its own order with WithObservedGeneration (some with
// WithOwnedConditions), interleaved at random (seeded) with another writer
// (its own conditions, finalizers, labels and annotations, spec bumps that
// raise the generation, a dependency's health that our conditions follow)
// and a replica of ours in another process (which this process's ledger
// does not know). Every stored state is recorded through a watch and
// attributed to its writer. At the end of each round, over the whole
// history:
//
//   - status.observedGeneration and each of our conditions' never decrease;
//   - a lastTransitionTime of ours never moves without a status flip, and
//     never goes back;
//   - only the other writer changes its entries (so none is lost or
//     resurrected), and it never changes ours;
//   - a write that changes our conditions leaves them in its writer's order;
//   - a reconcile that succeeds (no *StaleError, no requeue) started from a
//     snapshot no older than our own last write, and stored what it
//     changed, and its owned conditions as it computed them where it wrote
//     status, unless a newer observation (a higher observedGeneration)
//     holds them now: after a conflict, a re-read through a lagging reader
//     may show our observation already stored by a replica while the live
//     object is past it.
//
// At the end, once reconciles from a fresh read are no longer stale: the
// observedGenerations equal the generation, our conditions are what the
// last spec and health give, and a further reconcile of each kind from a
// fresh read writes nothing (no write loop between writers of different
// orders).
//
// STEADY_PROPERTY_ROUNDS sets the number of rounds (default 24),
// STEADY_PROPERTY_SEED the seed.
func TestPropertyOlderThanLive(t *testing.T) {
	env.Require(t)
	rounds := 24
	if s := os.Getenv("STEADY_PROPERTY_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		must(t, err)
		rounds = n
	}
	h := newOlderHarness(t)
	for round := range rounds {
		h.round = round
		h.runRound()
		h.waitWatched()
		h.checkHistory()
		if t.Failed() {
			t.Fatalf("round %d failed (seed %d); log:\n%s\nlast states:\n%s", round, h.seed, strings.Join(h.log, "\n"), h.lastStates(12))
		}
	}
	h.converge()
	if t.Failed() || os.Getenv("STEADY_PROPERTY_LOG") != "" {
		t.Logf("seed %d; log:\n%s", h.seed, strings.Join(h.log, "\n"))
	}
}

// ourTypes are our controller's condition types; the other writer's are
// Their0..Their2.
var ourTypes = []string{"Ready", "Sized", "Healthy"}

// olderWriter is who wrote a stored state: one of our reconcilers (with the
// order it writes our conditions in), the replica, the other writer.
type olderWriter struct {
	name  string
	order []string // nil: the other writer, which never writes our conditions
}

type olderHarness struct {
	t     *testing.T
	rng   *rand.Rand
	seed  int64
	ctx   context.Context
	key   client.ObjectKey
	round int
	log   []string

	healthy bool
	cc      *testapi.Cached
	direct  client.Client // counted by directN
	directN *testapi.Counter
	mgrC    client.Client // cc.Client, attributed
	dirC    client.Client // direct, attributed

	mu      sync.Mutex
	states  []*testapi.Widget       // every stored state, from a watch
	by      map[string]*olderWriter // resourceVersion -> its writer
	checked int

	cur     *olderWriter // the reconcile of ours running now
	run     *olderRun    // what it read and computed
	quiet   bool         // no other writer (the end)
	last    time.Time    // the last flip computed
	lastOur string       // resourceVersion of our last write
	hook    func()       // runs before one request of our Patch

	writers map[string]*olderWriter
	fors    map[string]crreconcile.Reconciler
	owned   map[string]bool
}

func newOlderHarness(t *testing.T) *olderHarness {
	seed := time.Now().UnixNano()
	if s := os.Getenv("STEADY_PROPERTY_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseInt(s, 10, 64)
		must(t, err)
	}
	t.Logf("seed %d", seed)
	h := &olderHarness{t: t, rng: rand.New(rand.NewSource(seed)), seed: seed, ctx: context.Background(),
		by: map[string]*olderWriter{}, healthy: true}
	h.cc = testapi.StartManager(t, env, testapi.ManagerOptions{Delay: 200 * time.Millisecond, Informers: []client.Object{&testapi.Widget{}}})
	var err error
	h.direct, h.directN, err = testapi.NewCountingClient(env.Config, env.Scheme)
	must(t, err)
	// Both write as this process: through one State, the manager's
	// (steady.NewClient's), which the interceptors would hide.
	st := scope.Held(h.cc.Client)
	h.mgrC, h.dirC = scope.Wrap(h.attributed(h.cc.Client), st), scope.Wrap(h.attributed(h.direct), st)

	// Six writers of our conditions, each in its own order.
	perms := [][]string{{"Ready", "Sized", "Healthy"}, {"Healthy", "Ready", "Sized"}, {"Sized", "Healthy", "Ready"},
		{"Ready", "Healthy", "Sized"}, {"Sized", "Ready", "Healthy"}, {"Healthy", "Sized", "Ready"}}
	h.writers = map[string]*olderWriter{"other": {name: "other"}, "create": {name: "create"}}
	for i, name := range []string{"for-api", "for-cache", "patcher-cached", "patcher-old", "patcher-fresh", "replica"} {
		h.writers[name] = &olderWriter{name: name, order: perms[i]}
	}
	// It writes no conditions; an order says it is ours.
	h.writers["patcher-status"] = &olderWriter{name: "patcher-status", order: perms[0]}
	h.owned = map[string]bool{"for-api": true, "patcher-cached": true}
	h.fors = map[string]crreconcile.Reconciler{}
	for _, name := range []string{"for-api", "for-cache"} {
		opts := []reconcile.ForOption{reconcile.WithObservedGeneration{}}
		if name == "for-api" {
			opts = append(opts, reconcile.WithOwnedConditions(ourTypes),
				reconcile.WithFinalizer("steady.test/ours", finalizer.Func(func(context.Context, client.Object) error { return nil })))
		}
		r, err := reconcile.For(h.mgrC, h.forBody(name), opts...)
		must(t, err)
		h.fors[name] = r
	}

	ns := env.Namespace(t)
	h.key = client.ObjectKey{Namespace: ns, Name: "w"}
	ww, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	must(t, err)
	wctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	wi, err := ww.Watch(wctx, &testapi.WidgetList{}, client.InNamespace(ns))
	must(t, err)
	t.Cleanup(wi.Stop)
	go func() {
		for ev := range wi.ResultChan() {
			if w, ok := ev.Object.(*testapi.Widget); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				h.mu.Lock()
				h.states = append(h.states, w.DeepCopy())
				h.mu.Unlock()
			}
		}
	}()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w",
		Labels: map[string]string{"their/l0": "v0"}, Annotations: map[string]string{"their/a0": "v0"},
		Finalizers: []string{"their.io/f0"}}, Spec: testapi.WidgetSpec{Size: 1}}
	must(t, env.Client.Create(h.ctx, w))
	h.attribute(w.ResourceVersion, h.writers["create"])
	waitCached(t, h.cc.Client, w, w.ResourceVersion)
	return h
}

// now is the time of a flip computed now: now, and a second later than
// the last, so that a lastTransitionTime going back shows.
func (h *olderHarness) now() metav1.Time {
	h.last = h.last.Add(time.Second)
	if now := time.Now().Truncate(time.Second); now.After(h.last) {
		h.last = now
	}
	return metav1.NewTime(h.last)
}

func (h *olderHarness) logf(format string, args ...any) {
	h.log = append(h.log, fmt.Sprintf("round %d: ", h.round)+fmt.Sprintf(format, args...))
}

// attribute records who wrote the state at rv (the first to claim it: a
// write that changed nothing answers with the resourceVersion it found).
func (h *olderHarness) attribute(rv string, who *olderWriter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.by[rv]; !ok {
		h.by[rv] = who
	}
}

// attributed wraps c: its writes are attributed to the reconcile running,
// and the hook, when set, runs once before one of them.
func (h *olderHarness) attributed(c client.Client) client.Client {
	var ww client.WithWatch
	if w, ok := c.(client.WithWatch); ok {
		ww = w
	} else {
		ww = noWatch{c}
	}
	before := func() {
		if h.hook != nil && h.rng.Intn(2) == 0 {
			hook := h.hook
			h.hook = nil
			hook()
		}
	}
	after := func(obj client.Object) {
		h.attribute(obj.GetResourceVersion(), h.cur)
		h.lastOur = obj.GetResourceVersion()
	}
	return interceptor.NewClient(ww, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			before()
			if err := c.Patch(ctx, obj, patch, opts...); err != nil {
				return err
			}
			after(obj)
			return nil
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			before()
			if err := c.SubResource(sub).Patch(ctx, obj, patch, opts...); err != nil {
				return err
			}
			after(obj)
			if h.run != nil {
				h.run.wroteStatus = true
			}
			return nil
		},
	})
}

type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("no watch")
}

// ourReconcile is our controller's body: our three conditions from the
// spec and the health of a dependency, observed at w's generation, with a
// lastTransitionTime that moves only where the status flips (against w),
// written where our conditions stand in the list, in order; the phase; our
// label. now is the time of a flip. It returns the conditions it computed.
func ourReconcile(w *testapi.Widget, healthy bool, order []string, now metav1.Time) map[string]metav1.Condition {
	size := w.Spec.Size
	status := func(b bool) metav1.ConditionStatus {
		if b {
			return metav1.ConditionTrue
		}
		return metav1.ConditionFalse
	}
	health := map[bool]string{true: "Up", false: "Down"}[healthy]
	want := map[string]metav1.Condition{
		"Sized":   {Type: "Sized", Status: status(size%2 == 0), Reason: fmt.Sprintf("Size%d", size), Message: fmt.Sprintf("size %d", size)},
		"Healthy": {Type: "Healthy", Status: status(healthy), Reason: health, Message: "dependency " + health},
		"Ready":   {Type: "Ready", Status: status(size%2 == 0 && healthy), Reason: "Summary", Message: fmt.Sprintf("size %d, %s", size, health)},
	}
	for typ, c := range want {
		c.ObservedGeneration = w.Generation
		c.LastTransitionTime = now
		if old := meta.FindStatusCondition(w.Status.Conditions, typ); old != nil && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		want[typ] = c
	}
	var slots []int
	for i, c := range w.Status.Conditions {
		if slices.Contains(ourTypes, c.Type) {
			slots = append(slots, i)
		}
	}
	out := slices.Clone(w.Status.Conditions)
	for i, typ := range order {
		if i < len(slots) {
			out[slots[i]] = want[typ]
		} else {
			out = append(out, want[typ])
		}
	}
	w.Status.Conditions = out
	w.Status.Phase = fmt.Sprintf("Size%d", size)
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels["steady.test/managed"] = "true"
	return want
}

// olderRun is what one reconcile of ours read and computed.
type olderRun struct {
	snapshot *testapi.Widget
	computed map[string]metav1.Condition
	phase    string
	owned    bool
	// wroteStatus: its Patch wrote the status subresource (and so imposed
	// its owned conditions; a Patch that finds no change against its
	// snapshot writes nothing, owned or not).
	wroteStatus bool
}

func (h *olderHarness) forBody(name string) func(context.Context, *testapi.Widget) (ctrl.Result, error) {
	return func(ctx context.Context, w *testapi.Widget) (ctrl.Result, error) {
		h.run = &olderRun{snapshot: w.DeepCopy()}
		h.maybeForeign("between read and Patch", 3)
		h.run.computed = ourReconcile(w, h.healthy, h.writers[name].order, h.now())
		h.run.phase = w.Status.Phase
		return ctrl.Result{}, nil
	}
}

// maybeForeign runs, one time in n, one or two ops of the other writer.
func (h *olderHarness) maybeForeign(when string, n int) {
	if h.quiet || h.rng.Intn(n) != 0 {
		return
	}
	for range 1 + h.rng.Intn(2) {
		h.logf("%s: %s", when, h.foreignOp())
	}
}

// update changes the object as read fresh and writes it (Update, or
// Status().Update), retrying on conflicts: the other writer, and the
// replica.
func (h *olderHarness) update(status bool, who *olderWriter, change func(w *testapi.Widget) bool) {
	for i := 0; ; i++ {
		w := &testapi.Widget{}
		must(h.t, env.Client.Get(h.ctx, h.key, w))
		if !change(w) {
			return
		}
		var err error
		if status {
			err = env.Client.Status().Update(h.ctx, w)
		} else {
			err = env.Client.Update(h.ctx, w)
		}
		if apierrors.IsConflict(err) && i < 10 {
			continue
		}
		must(h.t, err)
		h.attribute(w.ResourceVersion, who)
		return
	}
}

func (h *olderHarness) foreignOp() string {
	other := h.writers["other"]
	k := strconv.Itoa(h.rng.Intn(3))
	switch h.rng.Intn(11) {
	case 0, 1:
		st := []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}[h.rng.Intn(3)]
		h.update(true, other, func(w *testapi.Widget) bool {
			return meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: "Their" + k, Status: st, Reason: "Theirs", Message: "round " + strconv.Itoa(h.round)})
		})
		return fmt.Sprintf("other: Their%s=%s", k, st)
	case 2:
		h.update(true, other, func(w *testapi.Widget) bool { return meta.RemoveStatusCondition(&w.Status.Conditions, "Their"+k) })
		return "other: Their" + k + " removed"
	case 3:
		f := "their.io/f" + k
		h.update(false, other, func(w *testapi.Widget) bool {
			if i := slices.Index(w.Finalizers, f); i >= 0 {
				w.Finalizers = slices.Delete(w.Finalizers, i, i+1)
			} else {
				w.Finalizers = append(w.Finalizers, f)
			}
			return true
		})
		return "other: finalizer " + f + " toggled"
	case 4:
		h.update(false, other, func(w *testapi.Widget) bool {
			if w.Labels == nil {
				w.Labels = map[string]string{}
			}
			if _, ok := w.Labels["their/l"+k]; ok && h.rng.Intn(2) == 0 {
				delete(w.Labels, "their/l"+k)
			} else {
				w.Labels["their/l"+k] = "r" + strconv.Itoa(h.round)
			}
			if w.Annotations == nil {
				w.Annotations = map[string]string{}
			}
			if _, ok := w.Annotations["their/a"+k]; ok && h.rng.Intn(2) == 0 {
				delete(w.Annotations, "their/a"+k)
			} else {
				w.Annotations["their/a"+k] = "r" + strconv.Itoa(h.round)
			}
			return true
		})
		return "other: label and annotation " + k
	case 5, 6:
		h.update(false, other, func(w *testapi.Widget) bool { w.Spec.Size++; return true })
		return "other: spec bumped"
	case 7, 8, 9:
		bump := h.rng.Intn(3) != 0 // the spec changed, and the replica reconciled it
		if bump {
			h.update(false, other, func(w *testapi.Widget) bool { w.Spec.Size++; return true })
		}
		h.update(true, h.writers["replica"], func(w *testapi.Widget) bool {
			ourReconcile(w, h.healthy, h.writers["replica"].order, h.now())
			w.Status.Replicas = w.Spec.Size
			w.Status.ObservedGeneration = w.Generation
			return true
		})
		return fmt.Sprintf("replica reconciled (spec bumped %v, healthy %v)", bump, h.healthy)
	default:
		h.healthy = !h.healthy
		return fmt.Sprintf("health -> %v", h.healthy)
	}
}

// runRound: the other writer maybe, then one reconcile of ours of a random
// kind, with the other writer maybe between its read and its Patch and
// before one of its requests.
func (h *olderHarness) runRound() {
	h.maybeForeign("before", 2)
	if h.rng.Intn(3) == 0 {
		h.hook = func() { h.logf("in Patch: %s", h.foreignOp()) }
	}
	defer func() { h.hook = nil }()
	kinds := []string{"for-api", "for-cache", "patcher-cached", "patcher-old", "patcher-fresh", "patcher-status"}
	name := kinds[h.rng.Intn(len(kinds))]
	h.cur = h.writers[name]
	h.run = nil
	ownBefore := h.lastOur
	var err error
	clean := false
	switch name {
	case "for-api", "for-cache":
		var res ctrl.Result
		res, err = h.fors[name].Reconcile(h.ctx, ctrl.Request{NamespacedName: h.key})
		clean = err == nil && res.RequeueAfter == 0
		h.logf("%s: %+v, %v", name, res, err)
	default:
		w, c := &testapi.Widget{}, h.dirC
		switch name {
		case "patcher-cached":
			c = h.mgrC
			must(h.t, h.cc.Client.Get(h.ctx, h.key, w))
			_ = h.rng.Intn(2) // was: with an API reader of its own or not; kept for the seeds' sequences
		case "patcher-old":
			w = h.oldCopy()
		case "patcher-status":
			if h.rng.Intn(2) == 0 {
				w = h.oldCopy()
			} else {
				c = h.mgrC
				must(h.t, h.cc.Client.Get(h.ctx, h.key, w))
			}
		default:
			must(h.t, env.Client.Get(h.ctx, h.key, w))
		}
		p, perr := reconcile.NewPatcher(c, w)
		must(h.t, perr)
		h.run = &olderRun{snapshot: w.DeepCopy()}
		h.maybeForeign("between read and Patch", 3)
		var popts []reconcile.PatchOption
		if name == "patcher-status" {
			// Another controller of ours: status fields, no conditions;
			// only status.observedGeneration says which generation it saw.
			w.Status.Replicas, w.Status.Phase = w.Spec.Size, fmt.Sprintf("Size%d", w.Spec.Size)
			popts = append(popts, reconcile.WithObservedGeneration{})
		} else {
			h.run.computed = ourReconcile(w, h.healthy, h.cur.order, h.now())
			h.run.phase = w.Status.Phase
			// Sometimes without WithObservedGeneration: then only the
			// conditions say which generation they saw.
			if name == "patcher-old" || h.rng.Intn(4) != 0 {
				popts = append(popts, reconcile.WithObservedGeneration{})
			}
		}
		if h.owned[name] || (name == "patcher-old" && h.rng.Intn(2) == 0) {
			popts = append(popts, reconcile.WithOwnedConditions(ourTypes))
			h.run.owned = true
		}
		err = p.Patch(h.ctx, w, popts...)
		var se *reconcile.StaleError
		if errors.As(err, &se) {
			h.logf("%s (snapshot %s, generation %d): stale: %v", name, h.run.snapshot.ResourceVersion, h.run.snapshot.Generation, err)
			err = nil
		} else {
			clean = err == nil
			h.logf("%s (snapshot %s, generation %d, owned %v, %d options): %v", name, h.run.snapshot.ResourceVersion, h.run.snapshot.Generation, h.run.owned, len(popts), err)
		}
	}
	if err != nil {
		h.t.Errorf("%s: %v", name, err)
		return
	}
	if name == "for-api" && h.run != nil {
		h.run.owned = true
	}
	if clean && h.run != nil && h.run.computed != nil {
		h.checkLanded(name)
		if rvLess(h.run.snapshot.ResourceVersion, ownBefore) {
			h.t.Errorf("%s succeeded from a snapshot at %s, older than our own write at %s: a change judged against it may be none where the live object needs one",
				name, h.run.snapshot.ResourceVersion, ownBefore)
		}
	}
	if h.rng.Intn(4) == 0 {
		h.healthy = !h.healthy
		h.logf("health -> %v", h.healthy)
	}
}

// oldCopy is a stored state from the history: mostly one no older than
// our own last write (older ones are refused at once), else any.
func (h *olderHarness) oldCopy() *testapi.Widget {
	h.waitWatched()
	h.mu.Lock()
	defer h.mu.Unlock()
	from := 0
	if h.rng.Intn(4) != 0 {
		for i, s := range h.states {
			if s.ResourceVersion == h.lastOur {
				from = i
			}
		}
	}
	return h.states[from+h.rng.Intn(len(h.states)-from)].DeepCopy()
}

// checkLanded: a reconcile that succeeded stored the conditions it changed
// (against its snapshot), its owned ones where it wrote status, and the
// phase it changed.
func (h *olderHarness) checkLanded(name string) {
	got := &testapi.Widget{}
	must(h.t, env.Client.Get(h.ctx, h.key, got))
	for _, typ := range ourTypes {
		c := h.run.computed[typ]
		old := meta.FindStatusCondition(h.run.snapshot.Status.Conditions, typ)
		changed := old == nil || old.Status != c.Status || old.Reason != c.Reason || old.Message != c.Message || old.ObservedGeneration != c.ObservedGeneration
		if !changed && !(h.run.owned && h.run.wroteStatus) {
			continue
		}
		s := meta.FindStatusCondition(got.Status.Conditions, typ)
		// A newer observation (a higher observedGeneration, a replica's)
		// supersedes ours: the Patch found ours already stored on the state
		// it re-read (the same observation, by another writer), and the live
		// object, past what a lagging read showed, holds a newer one.
		newer := c.ObservedGeneration > 0 && s != nil && s.ObservedGeneration > c.ObservedGeneration
		if !newer && (s == nil || s.Status != c.Status || s.Reason != c.Reason || s.Message != c.Message || s.ObservedGeneration < c.ObservedGeneration) {
			h.t.Errorf("%s succeeded but stored %s as %s, it computed %s (owned %v, snapshot %s)", name, typ, condJSON(s), condJSON(&c), h.run.owned, h.run.snapshot.ResourceVersion)
		}
	}
	if h.run.phase != h.run.snapshot.Status.Phase && got.Status.Phase != h.run.phase && got.Status.ObservedGeneration <= h.run.snapshot.Generation {
		h.t.Errorf("%s succeeded but stored phase %q, it computed %q", name, got.Status.Phase, h.run.phase)
	}
}

// lastStates describes the last n stored states, for a failure.
func (h *olderHarness) lastStates(n int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, st := range h.states[max(0, len(h.states)-n):] {
		who := "?"
		if w := h.by[st.ResourceVersion]; w != nil {
			who = w.name
		}
		out = append(out, fmt.Sprintf("%s by %s: generation %d, observedGeneration %d, phase %s, ours %s",
			st.ResourceVersion, who, st.Generation, st.Status.ObservedGeneration, st.Status.Phase, strings.ReplaceAll(ourView(st), "\n", " ")))
	}
	return strings.Join(out, "\n")
}

func rvLess(a, b string) bool {
	an, _ := strconv.ParseUint(a, 10, 64)
	bn, _ := strconv.ParseUint(b, 10, 64)
	return an < bn
}

// waitWatched waits until the watch has seen the live state.
func (h *olderHarness) waitWatched() {
	live := &testapi.Widget{}
	must(h.t, env.Client.Get(h.ctx, h.key, live))
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.mu.Lock()
		n := len(h.states)
		seen := n > 0 && h.states[n-1].ResourceVersion == live.ResourceVersion
		h.mu.Unlock()
		if seen {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the watch never saw resourceVersion %s", live.ResourceVersion)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkHistory checks every pair of consecutive stored states not checked
// yet.
func (h *olderHarness) checkHistory() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := max(1, h.checked); i < len(h.states); i++ {
		p, s := h.states[i-1], h.states[i]
		who := h.by[s.ResourceVersion]
		where := fmt.Sprintf("state %s (after %s)", s.ResourceVersion, p.ResourceVersion)
		if who == nil {
			h.t.Errorf("%s: written by no writer we know", where)
			continue
		}
		where += " by " + who.name
		if s.Status.ObservedGeneration < p.Status.ObservedGeneration {
			h.t.Errorf("%s: status.observedGeneration %d -> %d", where, p.Status.ObservedGeneration, s.Status.ObservedGeneration)
		}
		for _, typ := range ourTypes {
			pc, sc := meta.FindStatusCondition(p.Status.Conditions, typ), meta.FindStatusCondition(s.Status.Conditions, typ)
			switch {
			case pc != nil && sc == nil:
				h.t.Errorf("%s: our %s removed", where, typ)
			case pc == nil || sc == nil:
			case sc.ObservedGeneration < pc.ObservedGeneration:
				h.t.Errorf("%s: %s observedGeneration %d -> %d", where, typ, pc.ObservedGeneration, sc.ObservedGeneration)
			case sc.Status == pc.Status && !sc.LastTransitionTime.Equal(&pc.LastTransitionTime):
				h.t.Errorf("%s: %s lastTransitionTime moved without a flip: %s -> %s", where, typ, condJSON(pc), condJSON(sc))
			case sc.LastTransitionTime.Before(&pc.LastTransitionTime):
				h.t.Errorf("%s: %s lastTransitionTime went back: %s -> %s", where, typ, condJSON(pc), condJSON(sc))
			}
		}
		if pf, sf := foreignView(p), foreignView(s); who.order != nil && pf != sf {
			h.t.Errorf("%s: the other writer's entries changed:\n%s\n->\n%s", where, pf, sf)
		}
		po, so := ourView(p), ourView(s)
		if who.order == nil && po != so {
			h.t.Errorf("%s: our conditions changed:\n%s\n->\n%s", where, po, so)
		}
		if order := ourOrder(s); who.order != nil && po != so && !slices.Equal(order, who.order) {
			h.t.Errorf("%s: our conditions in order %v, their writer's is %v", where, order, who.order)
		}
	}
	h.checked = len(h.states)
}

// foreignView is the other writer's entries, orderless.
func foreignView(w *testapi.Widget) string {
	var conds []string
	for _, c := range w.Status.Conditions {
		if strings.HasPrefix(c.Type, "Their") {
			conds = append(conds, condJSON(&c))
		}
	}
	sort.Strings(conds)
	var fins []string
	for _, f := range w.Finalizers {
		if strings.HasPrefix(f, "their.io/") {
			fins = append(fins, f)
		}
	}
	sort.Strings(fins)
	theirs := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			if strings.HasPrefix(k, "their/") {
				out[k] = v
			}
		}
		return out
	}
	b, _ := json.Marshal(map[string]any{"conditions": conds, "finalizers": fins, "labels": theirs(w.Labels), "annotations": theirs(w.Annotations)})
	return string(b)
}

// ourView is our conditions as stored, in order.
func ourView(w *testapi.Widget) string {
	var out []string
	for _, c := range w.Status.Conditions {
		if slices.Contains(ourTypes, c.Type) {
			out = append(out, condJSON(&c))
		}
	}
	return strings.Join(out, "\n")
}

func ourOrder(w *testapi.Widget) []string {
	var out []string
	for _, c := range w.Status.Conditions {
		if slices.Contains(ourTypes, c.Type) {
			out = append(out, c.Type)
		}
	}
	return out
}

func condJSON(c *metav1.Condition) string {
	if c == nil {
		return "none"
	}
	b, _ := json.Marshal(c)
	return string(b)
}

// firstForAPI runs for-api once where it never ran in the rounds (about one
// seed in eighty picks none of it in 24 rounds): its first reconcile adds
// its finalizer, one write that is no loop, and must write nothing else
// from the converged state.
func (h *olderHarness) firstForAPI() {
	w := &testapi.Widget{}
	must(h.t, env.Client.Get(h.ctx, h.key, w))
	if controllerutil.ContainsFinalizer(w, "steady.test/ours") {
		return
	}
	waitCached(h.t, h.cc.Client, w, w.ResourceVersion)
	cur := h.cur
	h.cur = h.writers["for-api"]
	defer func() { h.cur = cur }()
	h.cc.Counter.Reset()
	h.directN.Reset()
	if _, err := h.fors["for-api"].Reconcile(h.ctx, ctrl.Request{NamespacedName: h.key}); err != nil {
		h.t.Errorf("the first reconcile of for-api: %v", err)
	}
	if n := h.cc.Counter.Writes() + h.directN.Writes(); n != 1 {
		h.t.Errorf("the first reconcile of for-api, after convergence, wrote %d times (%s; %s), want once (its finalizer)", n, h.cc.Counter, h.directN)
	}
	must(h.t, env.Client.Get(h.ctx, h.key, w))
	if !controllerutil.ContainsFinalizer(w, "steady.test/ours") {
		h.t.Errorf("the first reconcile of for-api did not add its finalizer: %v", w.Finalizers)
	}
	h.logf("for-api, which no round ran, added its finalizer")
}

// converge: reconciles from fresh reads until one is not stale; then the
// observedGenerations are the generation and our conditions what the spec
// and health give; then one reconcile of each kind, each from a fresh read
// (the cache caught up), writes nothing.
func (h *olderHarness) converge() {
	h.round, h.quiet = -1, true
	h.cur = h.writers["patcher-fresh"]
	for i := 0; ; i++ {
		w := &testapi.Widget{}
		must(h.t, env.Client.Get(h.ctx, h.key, w))
		p, err := reconcile.NewPatcher(h.dirC, w)
		must(h.t, err)
		ourReconcile(w, h.healthy, h.cur.order, h.now())
		err = p.Patch(h.ctx, w, reconcile.WithObservedGeneration{}, reconcile.WithOwnedConditions(ourTypes))
		var se *reconcile.StaleError
		if errors.As(err, &se) && i < 10 {
			h.logf("final reconcile %d: %v", i, err)
			continue
		}
		must(h.t, err)
		break
	}
	h.firstForAPI()
	final := &testapi.Widget{}
	must(h.t, env.Client.Get(h.ctx, h.key, final))
	want := ourReconcile(final.DeepCopy(), h.healthy, nil, h.now())
	if final.Status.ObservedGeneration != final.Generation {
		h.t.Errorf("final: generation %d, status.observedGeneration %d", final.Generation, final.Status.ObservedGeneration)
	}
	for _, typ := range ourTypes {
		c := meta.FindStatusCondition(final.Status.Conditions, typ)
		if w := want[typ]; c == nil || c.ObservedGeneration != final.Generation || c.Status != w.Status || c.Reason != w.Reason || c.Message != w.Message {
			h.t.Errorf("final: %s is %s, want %s at generation %d", typ, condJSON(c), condJSON(&w), final.Generation)
		}
	}
	h.waitWatched()
	h.checkHistory()

	for _, name := range []string{"for-api", "for-cache", "patcher-cached", "patcher-fresh", "patcher-old"} {
		live := &testapi.Widget{}
		must(h.t, env.Client.Get(h.ctx, h.key, live))
		waitCached(h.t, h.cc.Client, live, live.ResourceVersion)
		h.cur = h.writers[name]
		h.cc.Counter.Reset()
		h.directN.Reset()
		var err error
		switch name {
		case "for-api", "for-cache":
			var res ctrl.Result
			res, err = h.fors[name].Reconcile(h.ctx, ctrl.Request{NamespacedName: h.key})
			if err == nil && res.RequeueAfter != 0 {
				err = fmt.Errorf("requeue %+v", res)
			}
		default:
			w, c := &testapi.Widget{}, h.dirC
			if name == "patcher-cached" {
				must(h.t, h.cc.Client.Get(h.ctx, h.key, w))
				c = h.mgrC
			} else {
				must(h.t, env.Client.Get(h.ctx, h.key, w))
			}
			p, perr := reconcile.NewPatcher(c, w)
			must(h.t, perr)
			ourReconcile(w, h.healthy, h.cur.order, h.now())
			opts := []reconcile.PatchOption{reconcile.WithObservedGeneration{}}
			if h.owned[name] {
				opts = append(opts, reconcile.WithOwnedConditions(ourTypes))
			}
			err = p.Patch(h.ctx, w, opts...)
		}
		if err != nil {
			h.t.Errorf("after convergence, %s: %v", name, err)
		}
		if n := h.cc.Counter.Writes() + h.directN.Writes(); n != 0 {
			h.t.Errorf("after convergence, a reconcile of %s from a fresh read wrote %d times (%s; %s): a write loop", name, n, h.cc.Counter, h.directN)
		}
	}
	h.waitWatched()
	h.checkHistory()
}

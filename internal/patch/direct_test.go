package patch

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
	"github.com/steadyk8s/steady/internal/testapi"
)

// oddStatus has what a Widget's status lacks: fields without omitempty (in
// the zero status as "", 0, null, {}), a pointer, a map, a nested struct
// and conditions that are not omitted when empty.
type oddStatus struct {
	Phase      string             `json:"phase"`
	Count      int64              `json:"count"`
	Ready      *bool              `json:"ready"`
	Labels     map[string]string  `json:"labels"`
	Names      []string           `json:"names"`
	Inner      oddInner           `json:"inner"`
	Conditions []metav1.Condition `json:"conditions"`
	// ObservedGeneration, named as the option sets it.
	ObservedGeneration int64 `json:"observedGeneration"`
}

type oddInner struct {
	Note  string            `json:"note"`
	Sizes map[string]int64  `json:"sizes,omitempty"`
	Tags  map[string]string `json:"tags"`
}

type oddSpec struct {
	Size int `json:"size"`
}

type oddObj struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              oddSpec   `json:"spec"`
	Status            oddStatus `json:"status,omitempty"`
}

func (o *oddObj) DeepCopyObject() runtime.Object {
	c := *o
	o.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	s := &c.Status
	if s.Ready != nil {
		r := *s.Ready
		s.Ready = &r
	}
	s.Labels = cloneMap(s.Labels)
	s.Inner.Sizes = cloneMap(s.Inner.Sizes)
	s.Inner.Tags = cloneMap(s.Inner.Tags)
	if s.Names != nil {
		s.Names = append([]string{}, s.Names...)
	}
	if s.Conditions != nil {
		s.Conditions = append([]metav1.Condition{}, s.Conditions...)
	}
	return &c
}

// sparseObj's zero status converts to an empty map (every field
// omitempty) while a status set may hold an empty object (a pointer to a
// struct of omitted fields), which the diff prunes.
type sparseObj struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            sparseStatus `json:"status,omitempty"`
}

type sparseStatus struct {
	Extra      *sparseExtra       `json:"extra,omitempty"`
	Phase      string             `json:"phase,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

type sparseExtra struct {
	Note string            `json:"note,omitempty"`
	Tags map[string]string `json:"tags,omitempty"`
	Deep *sparseExtra      `json:"deep,omitempty"`
}

func (o *sparseObj) DeepCopyObject() runtime.Object {
	c := *o
	o.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	var cp func(e *sparseExtra) *sparseExtra
	cp = func(e *sparseExtra) *sparseExtra {
		if e == nil {
			return nil
		}
		out := *e
		out.Tags = cloneMap(e.Tags)
		out.Deep = cp(e.Deep)
		return &out
	}
	c.Status.Extra = cp(o.Status.Extra)
	if c.Status.Conditions != nil {
		c.Status.Conditions = append([]metav1.Condition{}, c.Status.Conditions...)
	}
	return &c
}

func randomSparsePair(rng *rand.Rand) (client.Object, client.Object) {
	before := &sparseObj{TypeMeta: metav1.TypeMeta{APIVersion: "test.steady.dev/v1", Kind: "Sparse"}, ObjectMeta: randomMeta(rng)}
	if rng.IntN(4) == 0 {
		before.Status.Phase = "Old"
	}
	after := before.DeepCopyObject().(*sparseObj)
	if rng.IntN(2) == 0 {
		changeMeta(rng, &after.ObjectMeta)
	}
	if rng.IntN(2) == 0 {
		s := &after.Status
		s.Conditions = randomConditions(rng)
		switch rng.IntN(4) {
		case 0:
			s.Extra = &sparseExtra{}
		case 1:
			s.Extra = &sparseExtra{Tags: map[string]string{}, Deep: &sparseExtra{}}
		case 2:
			s.Extra = &sparseExtra{Note: "n", Deep: &sparseExtra{Tags: map[string]string{"a": "b"}}}
		}
	}
	return before, after
}

func cloneMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return nil
	}
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// randomConditions is 0 to 3 conditions, types from a small set (repeats
// included), some without a type.
func randomConditions(rng *rand.Rand) []metav1.Condition {
	var out []metav1.Condition
	if rng.IntN(6) == 0 {
		return []metav1.Condition{} // empty, not nil
	}
	for range rng.IntN(4) {
		out = append(out, metav1.Condition{
			Type:               []string{"Ready", "ChildrenReady", "Other", ""}[rng.IntN(4)],
			Status:             []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse}[rng.IntN(2)],
			Reason:             "R",
			ObservedGeneration: int64(rng.IntN(3)),
			LastTransitionTime: metav1.Unix(int64(100*rng.IntN(3)), 0),
		})
	}
	return out
}

// randomFinalizers is a finalizer list, repeats and empty names included.
func randomFinalizers(rng *rand.Rand) []string {
	switch rng.IntN(5) {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	var out []string
	for range 1 + rng.IntN(3) {
		out = append(out, []string{"a.dev/f", "b.dev/g", "c.dev/h", ""}[rng.IntN(4)])
	}
	return out
}

func randomMeta(rng *rand.Rand) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Namespace: "ns", Name: "w", UID: "u1", ResourceVersion: "7", Generation: int64(rng.IntN(3))}
	if rng.IntN(2) == 0 {
		m.UID = ""
	}
	m.Finalizers = randomFinalizers(rng)
	if rng.IntN(3) == 0 {
		m.Labels = map[string]string{"a": "1"}
	}
	return m
}

// changeMeta changes the finalizers mostly, sometimes another field.
func changeMeta(rng *rand.Rand, m *metav1.ObjectMeta) {
	switch rng.IntN(6) {
	case 0:
		m.Finalizers = append(m.Finalizers, "new.dev/f")
	case 1:
		m.Finalizers = randomFinalizers(rng)
	case 2:
		if len(m.Finalizers) > 1 {
			m.Finalizers = append([]string{}, m.Finalizers[1:]...)
			m.Finalizers = append(m.Finalizers, m.Finalizers[0]) // reordered, maybe
		}
	case 3:
		m.Labels = map[string]string{"b": "2"}
	case 4:
		m.Finalizers = nil
	}
}

func randomOptions(rng *rand.Rand) Options {
	o := Options{ObservedGeneration: rng.IntN(2) == 0, OptimisticLock: rng.IntN(4) == 0}
	if rng.IntN(3) == 0 {
		o.OwnedConditions = []string{"Ready"}
	}
	if rng.IntN(10) == 0 {
		o.ConditionLists = [][]string{{"status", "other"}}
	}
	return o
}

func randomWidgetPair(rng *rand.Rand) (client.Object, client.Object) {
	before := &testapi.Widget{TypeMeta: metav1.TypeMeta{APIVersion: "test.steady.dev/v1", Kind: "Widget"}, ObjectMeta: randomMeta(rng)}
	if rng.IntN(3) == 0 {
		before.Status.Phase = "Old"
		before.Status.Conditions = randomConditions(rng)
	}
	after := before.DeepCopy()
	if rng.IntN(2) == 0 {
		changeMeta(rng, &after.ObjectMeta)
	}
	if rng.IntN(2) == 0 {
		s := &after.Status
		s.Conditions = randomConditions(rng)
		s.Phase = []string{"", "Ready"}[rng.IntN(2)]
		s.Replicas = rng.IntN(2)
		if rng.IntN(3) == 0 {
			s.Namespaces = []string{}
		}
		if rng.IntN(4) == 0 {
			s.ObservedGeneration = after.Generation
		}
	}
	if rng.IntN(8) == 0 {
		after.Spec.Size++
	}
	if rng.IntN(8) == 0 {
		after.Kind = "Other" // never written: no difference
	}
	return before, after
}

func randomOddPair(rng *rand.Rand) (client.Object, client.Object) {
	before := &oddObj{TypeMeta: metav1.TypeMeta{APIVersion: "test.steady.dev/v1", Kind: "Odd"}, ObjectMeta: randomMeta(rng)}
	if rng.IntN(4) == 0 {
		before.Status.Phase = "Old"
	}
	after := before.DeepCopyObject().(*oddObj)
	if rng.IntN(2) == 0 {
		changeMeta(rng, &after.ObjectMeta)
	}
	if rng.IntN(2) == 0 {
		s := &after.Status
		s.Conditions = randomConditions(rng)
		switch rng.IntN(3) {
		case 0:
			s.Labels = map[string]string{}
		case 1:
			s.Labels = map[string]string{"x": "y"}
		}
		if rng.IntN(2) == 0 {
			r := rng.IntN(2) == 0
			s.Ready = &r
		}
		if rng.IntN(3) == 0 {
			s.Names = []string{}
		}
		if rng.IntN(3) == 0 {
			s.Inner.Note = "n"
			s.Inner.Sizes = map[string]int64{}
		}
		if rng.IntN(3) == 0 {
			s.Inner.Tags = map[string]string{"t": "1"}
		}
		s.Count = int64(rng.IntN(2))
	}
	if rng.IntN(8) == 0 {
		after.Spec.Size++
	}
	return before, after
}

// randomPair is a random snapshot and changed object: a Widget, an oddObj
// or a sparseObj, by seed.
func randomPair(seed uint64, rng *rand.Rand) (client.Object, client.Object) {
	switch seed % 3 {
	case 0:
		return randomWidgetPair(rng)
	case 1:
		return randomOddPair(rng)
	}
	return randomSparsePair(rng)
}

// TestDirectWritesAsThePlan: wherever planDirect plans a direct write, it
// is the one write plan and body make from the maps on the snapshot: the
// same endpoint, the same body and the same lock; over random objects
// (a Widget, and a type whose zero status is not empty), changes and
// options. planDirect reads the objects only; and it takes the writes it
// is for (a finalizer added, a first status) often enough for the
// comparison to mean something.
func TestDirectWritesAsThePlan(t *testing.T) {
	var finalizers, statuses, declined, unchangedCases int
	for seed := range uint64(12000) {
		rng := rand.New(rand.NewPCG(seed, 13))
		before, after := randomPair(seed, rng)
		o := randomOptions(rng)
		b0, a0 := before.DeepCopyObject(), after.DeepCopyObject()
		p, compared, same := (&Writer{}).planDirect(before, after, o)
		if !reflect.DeepEqual(before.DeepCopyObject(), b0) || !reflect.DeepEqual(after.DeepCopyObject(), a0) {
			t.Fatalf("seed %d: planDirect changed an object", seed)
		}
		if !compared {
			if len(o.ConditionLists) == 0 {
				t.Fatalf("seed %d: planDirect did not compare a %T", seed, before)
			}
			declined++
			continue
		}
		bm, am, err := toMaps(before, after, o)
		if err != nil {
			t.Fatal(err)
		}
		parts, err := plan(bm, am, after, o)
		if err != nil {
			t.Fatal(err)
		}
		if same {
			// Nothing to write: as unchanged has it.
			unchangedCases++
			if !unchanged(before, after, o) {
				t.Fatalf("seed %d: planDirect found nothing to write, unchanged something", seed)
			}
			continue
		}
		if unchanged(before, after, o) {
			t.Fatalf("seed %d: unchanged found nothing to write, planDirect something", seed)
		}
		if p == nil {
			declined++
			continue
		}
		if p.status {
			statuses++
		} else {
			finalizers++
		}
		if len(parts) != 1 || parts[0].status != p.status {
			t.Fatalf("seed %d: direct %s write, the plan has %d parts", seed, p.step(), len(parts))
		}
		body, lock, stale, err := parts[0].body(bm, o)
		if err != nil || stale != "" {
			t.Fatalf("seed %d: the plan's body: %v, stale %q", seed, err, stale)
		}
		checkFirst(t, fmt.Sprintf("seed %d (%T, %+v)", seed, before, o), p, body, lock)
		// And filled from maps, the part plans what the plan does.
		st := &state{}
		if err := fillDirect(p, before, after, st, o); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		again, _, _, err := p.body(st.m, o)
		if err != nil || !object.EqualJSON(again, body) {
			t.Fatalf("seed %d: filled, the part's body is %s, want %s (%v)", seed, js2(again), js2(body), err)
		}
	}
	t.Logf("direct finalizer writes %d, direct status writes %d, nothing to write %d, declined %d", finalizers, statuses, unchangedCases, declined)
	if finalizers < 200 || statuses < 200 || declined < 200 || unchangedCases < 200 {
		t.Fatalf("too few cases of a kind: %d finalizer, %d status, %d nothing to write, %d declined", finalizers, statuses, unchangedCases, declined)
	}
}

// checkFirst: the body of p's first attempt without preconditions is the
// bytes MarshalJSON gives body (or fails alike), and locks as lock does;
// with preconditions, it is those bytes with them set.
func checkFirst(t *testing.T, what string, p *part, body map[string]any, lock bool) {
	t.Helper()
	got, gerr := p.encodeFirst("", "", false)
	want, werr := object.MarshalJSON(body)
	if (gerr == nil) != (werr == nil) || string(got) != string(want) || p.firstLock != lock {
		t.Fatalf("%s: direct %s (%v) lock=%v, plan %s (%v) lock=%v", what, got, gerr, p.firstLock, want, werr, lock)
	}
	if gerr != nil {
		return
	}
	withPre := object.CopyJSON(body)
	setPrecondition(withPre, "uid", "u\"1")
	setPrecondition(withPre, "resourceVersion", "7")
	want, err := object.MarshalJSON(withPre)
	if err != nil {
		t.Fatal(err)
	}
	got, err = p.encodeFirst("u\"1", "7", true)
	if err != nil || string(got) != string(want) {
		t.Fatalf("%s: encoded with preconditions: %s, %v; want %s", what, got, err, want)
	}
}

func js2(m map[string]any) string {
	b, err := object.MarshalJSON(m)
	if err != nil {
		return fmt.Sprint(m)
	}
	return string(b)
}

// foreignChange is another writer's change to the stored object m: a
// finalizer, a label, a condition of a type this package's tests never
// write, a new generation observed, a status taken away.
func foreignChange(rng *rand.Rand, m map[string]any) {
	md := m["metadata"].(map[string]any)
	switch rng.IntN(5) {
	case 0:
		f, _ := md["finalizers"].([]any)
		md["finalizers"] = append(append([]any{}, f...), "other.dev/x")
	case 1:
		md["labels"] = map[string]any{"other": "writer"}
	case 2:
		st, _ := m["status"].(map[string]any)
		if st == nil {
			st = map[string]any{}
			m["status"] = st
		}
		c, _ := st["conditions"].([]any)
		st["conditions"] = append(append([]any{}, c...), map[string]any{
			"type": "Foreign", "status": "True", "reason": "R", "message": "", "lastTransitionTime": "1970-01-01T00:05:00Z",
		})
	case 3:
		g, _ := md["generation"].(int64)
		md["generation"] = g + 1
		st, _ := m["status"].(map[string]any)
		if st == nil {
			st = map[string]any{}
			m["status"] = st
		}
		st["observedGeneration"] = g + 1
	case 4:
		delete(m, "status")
	}
}

// TestDirectPatchesAsTheEngine: a Patch with direct writes sends what the
// engine alone sends, request by request, and ends with the same stored
// object, the same object in the caller's hands and the same result,
// through conflicts with another writer's change meanwhile, a kind without
// a status subresource, and a re-read that finds the object gone; over
// random objects, changes and options.
func TestDirectPatchesAsTheEngine(t *testing.T) {
	run := func(seed uint64, engineOnly bool) patchOutcome {
		pair := func(rng *rand.Rand) (client.Object, client.Object) { return randomPair(seed, rng) }
		return patchOnce(t, rand.New(rand.NewPCG(seed, 17)), pair, false, engineOnly)
	}
	var direct, conflicted, noStatus int
	for seed := range uint64(800) {
		got := run(seed, false)
		if !got.planned {
			continue
		}
		want := run(seed, true)
		direct++
		if len(want.bodies) > 1 {
			conflicted++
		}
		compareOutcomes(t, fmt.Sprintf("seed %d", seed), got, want)
		if strings.Contains(want.res, "wrote=[status, metadata and spec]") || strings.Contains(want.res, "wrote=[status]") && len(want.bodies) > 1 {
			noStatus++
		}
	}
	t.Logf("%d direct, %d with a conflict, %d with status retried", direct, conflicted, noStatus)
	if direct < 150 || conflicted < 50 || noStatus < 15 {
		t.Fatalf("too few cases: %d direct, %d with a conflict, %d status retried", direct, conflicted, noStatus)
	}
}

type readerFunc func(ctx context.Context, key client.ObjectKey, obj client.Object) error

func (f readerFunc) Get(ctx context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	return f(ctx, key, obj)
}

func (f readerFunc) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return nil
}

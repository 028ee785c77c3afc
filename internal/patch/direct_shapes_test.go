package patch

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

// The shapes below are Go types whose status the direct writes have to
// treat as the engine does: raw JSON, an interface, inlined structs,
// omitzero, numbers of every kind, conditions that are no
// []metav1.Condition (or no list), a type of its own conversion inside the
// status, a status under another name, none at all.

// shapeObj is an API object with status S.
type shapeObj[S any] struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              oddSpec `json:"spec"`
	Status            S       `json:"status,omitempty"`
}

func (o *shapeObj[S]) DeepCopyObject() runtime.Object { return deepCopyOf(o) }

// stateObj names its status "state".
type stateObj struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              oddSpec     `json:"spec"`
	State             plainStatus `json:"state,omitempty"`
}

func (o *stateObj) DeepCopyObject() runtime.Object { return deepCopyOf(o) }

// ptrStatusObj has its status behind a pointer (no direct write: its
// layout is not converted field by field).
type ptrStatusObj struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              oddSpec      `json:"spec"`
	Status            *plainStatus `json:"status,omitempty"`
}

func (o *ptrStatusObj) DeepCopyObject() runtime.Object { return deepCopyOf(o) }

// selfStatus converts itself, whole.
type selfStatus struct {
	Phase string
}

func (s selfStatus) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"phase": s.Phase, "conditions": nil})
}

// bareObj has no status.
type bareObj struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Data              map[string]string `json:"data,omitempty"`
}

func (o *bareObj) DeepCopyObject() runtime.Object { return deepCopyOf(o) }

type plainStatus struct {
	Phase              string             `json:"phase,omitempty"`
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

type rawStatus struct {
	Raw                json.RawMessage       `json:"raw,omitempty"`
	Ext                runtime.RawExtension  `json:"ext"`
	ExtPtr             *runtime.RawExtension `json:"extPtr,omitempty"`
	Any                any                   `json:"any"`
	AnyMap             map[string]any        `json:"anyMap,omitempty"`
	Conditions         []metav1.Condition    `json:"conditions"`
	ObservedGeneration int64                 `json:"observedGeneration"`
}

type CommonStatus struct {
	Phase      string             `json:"phase,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

type ExtraStatus struct {
	Extra string `json:"extra,omitempty"`
	Count int32  `json:"count"`
}

type embedStatus struct {
	CommonStatus `json:",inline"`
	*ExtraStatus `json:",inline"`
	Inner        oddInner `json:"inner"`
}

type omitzeroStatus struct {
	T          metav1.Time        `json:"t,omitzero"`
	Inner      oddInner           `json:"inner,omitzero"`
	N          int                `json:"n,omitzero"`
	M          map[string]string  `json:"m,omitzero"`
	Conditions []metav1.Condition `json:"conditions,omitzero"`
}

type numStatus struct {
	U64        uint64             `json:"u64"`
	U64s       []uint64           `json:"u64s,omitempty"`
	UMap       map[string]uint64  `json:"umap,omitempty"`
	F64        float64            `json:"f64"`
	F32        float32            `json:"f32,omitempty"`
	I8         int8               `json:"i8"`
	Q          resource.Quantity  `json:"q"`
	QPtr       *resource.Quantity `json:"qPtr,omitempty"`
	IS         intstr.IntOrString `json:"is"`
	Floats     []float64          `json:"floats,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

type mapCondStatus struct {
	Phase      string                      `json:"phase,omitempty"`
	Conditions map[string]metav1.Condition `json:"conditions"`
}

type stringCondStatus struct {
	Conditions []string `json:"conditions"`
	Phase      string   `json:"phase,omitempty"`
}

// myCond is a condition of another shape: a float, no reason.
type myCond struct {
	Type               string  `json:"type"`
	Status             string  `json:"status"`
	LastTransitionTime string  `json:"lastTransitionTime,omitempty"`
	ObservedGeneration int64   `json:"observedGeneration,omitempty"`
	Weight             float64 `json:"weight,omitempty"`
}

type myCondStatus struct {
	Conditions         []myCond `json:"conditions,omitempty"`
	ObservedGeneration int64    `json:"observedGeneration,omitempty"`
}

// structCondStatus has conditions whose zero value is no null.
type structCondStatus struct {
	Conditions oddInner `json:"conditions"`
	Phase      string   `json:"phase,omitempty"`
}

// marshalValue converts itself (a value receiver), marshalPtr with a
// pointer receiver.
type marshalValue struct {
	A string
}

func (m marshalValue) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"a": "v:" + m.A})
}

type marshalPtr struct {
	B int
}

func (m *marshalPtr) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"b": m.B * 2})
}

type marshalStatus struct {
	V          marshalValue       `json:"v"`
	P          marshalPtr         `json:"p"`
	Vs         []marshalValue     `json:"vs,omitempty"`
	T          metav1.Time        `json:"t"`
	D          metav1.Duration    `json:"d"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// sameValue is reflect.DeepEqual but for floats, compared bit by bit (a
// NaN is itself, -0 is not 0).
func sameValue(a, b reflect.Value) bool {
	if a.IsValid() != b.IsValid() {
		return false
	}
	if !a.IsValid() {
		return true
	}
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float())
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameValue(a.Elem(), b.Elem())
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !sameValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		it := a.MapRange()
		for it.Next() {
			bv := b.MapIndex(it.Key())
			if !bv.IsValid() || !sameValue(it.Value(), bv) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := range a.NumField() {
			if !a.Type().Field(i).IsExported() {
				continue
			}
			if !sameValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// deepCopyOf is a deep copy of *p, by reflection.
func deepCopyOf[T any](p *T) *T {
	out := new(T)
	out2 := deepCopyValue(reflect.ValueOf(p).Elem())
	reflect.ValueOf(out).Elem().Set(out2)
	return out
}

func deepCopyValue(v reflect.Value) reflect.Value {
	out := reflect.New(v.Type()).Elem()
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			p := reflect.New(v.Type().Elem())
			p.Elem().Set(deepCopyValue(v.Elem()))
			out.Set(p)
		}
	case reflect.Slice:
		if !v.IsNil() {
			s := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			for i := range v.Len() {
				s.Index(i).Set(deepCopyValue(v.Index(i)))
			}
			out.Set(s)
		}
	case reflect.Map:
		if !v.IsNil() {
			m := reflect.MakeMapWithSize(v.Type(), v.Len())
			it := v.MapRange()
			for it.Next() {
				m.SetMapIndex(it.Key(), deepCopyValue(it.Value()))
			}
			out.Set(m)
		}
	case reflect.Interface:
		if !v.IsNil() {
			out.Set(deepCopyValue(v.Elem()))
		}
	case reflect.Struct:
		out.Set(v) // unexported fields (a Quantity's cache, a Time's) as they are
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out.Field(i).Set(deepCopyValue(v.Field(i)))
			}
		}
	default:
		out.Set(v)
	}
	return out
}

var (
	conditionType = reflect.TypeFor[metav1.Condition]()
	rawMsgType    = reflect.TypeFor[json.RawMessage]()
	rawExtType    = reflect.TypeFor[runtime.RawExtension]()
	mvTimeType    = reflect.TypeFor[metav1.Time]()
	quantType     = reflect.TypeFor[resource.Quantity]()
	intOrStrType  = reflect.TypeFor[intstr.IntOrString]()
	durationType  = reflect.TypeFor[metav1.Duration]()
	anyType       = reflect.TypeFor[any]()
)

// shapeGen fills Go values at random, for the shapes: small sets of
// values (so that before and after often agree), nil and empty apart.
type shapeGen struct {
	rng *rand.Rand
	// oddNumbers: NaN and -0 now and then; bigUints: uint64 past
	// MaxInt64 (which the map server cannot decode back).
	oddNumbers, bigUints bool
}

func (g shapeGen) one(n int) bool { return g.rng.IntN(n) == 0 }

func (g shapeGen) fill(v reflect.Value, depth int) {
	rng := g.rng
	switch v.Type() {
	case conditionType:
		v.Set(reflect.ValueOf(metav1.Condition{
			Type:               []string{"Ready", "Synced", "Other", ""}[rng.IntN(4)],
			Status:             []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse}[rng.IntN(2)],
			Reason:             "R",
			ObservedGeneration: int64(rng.IntN(3)),
			LastTransitionTime: metav1.Unix(int64(100*rng.IntN(3)), 0),
		}))
		return
	case rawMsgType:
		v.Set(reflect.ValueOf(json.RawMessage([]string{`{"a":1}`, `[1,"x"]`, `"s"`, `{"b":{"c":null}}`}[rng.IntN(4)])))
		return
	case rawExtType:
		v.Set(reflect.ValueOf(runtime.RawExtension{Raw: []byte([]string{`{"k":"v"}`, `{"n":2.5}`, `{}`}[rng.IntN(3)])}))
		return
	case mvTimeType:
		v.Set(reflect.ValueOf(metav1.Unix(int64(100*rng.IntN(3)), 0)))
		return
	case quantType:
		v.Set(reflect.ValueOf(resource.MustParse([]string{"0", "1", "1500m", "2Gi"}[rng.IntN(4)])))
		return
	case intOrStrType:
		v.Set(reflect.ValueOf([]intstr.IntOrString{intstr.FromInt32(0), intstr.FromInt32(3), intstr.FromString("50%")}[rng.IntN(3)]))
		return
	case durationType:
		v.Set(reflect.ValueOf(metav1.Duration{Duration: time.Duration(rng.IntN(3)) * time.Second}))
		return
	case anyType:
		vals := []any{nil, "s", int64(3), float64(1.5), map[string]any{"k": "v"}, []any{"a", int64(1)}, map[string]any{}, true}
		if x := vals[rng.IntN(len(vals))]; x != nil {
			v.Set(reflect.ValueOf(x))
		}
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && v.Field(i).CanSet() && rng.IntN(3) != 0 {
				g.fill(v.Field(i), depth+1)
			}
		}
	case reflect.String:
		v.SetString([]string{"", "a", "b"}[rng.IntN(3)])
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(rng.IntN(3)))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		u := uint64(rng.IntN(3))
		if g.bigUints && v.Kind() == reflect.Uint64 && g.one(8) {
			u = math.MaxInt64 + 5
		}
		v.SetUint(u)
	case reflect.Float32, reflect.Float64:
		f := []float64{0, 0.5, 2}[rng.IntN(3)]
		if g.oddNumbers {
			switch rng.IntN(12) {
			case 0:
				f = math.NaN()
			case 1, 2:
				f = math.Copysign(0, -1)
			}
		}
		v.SetFloat(f)
	case reflect.Pointer:
		if depth < 6 && rng.IntN(2) == 0 {
			p := reflect.New(v.Type().Elem())
			g.fill(p.Elem(), depth+1)
			v.Set(p)
		}
	case reflect.Slice:
		switch {
		case rng.IntN(3) == 0:
			v.SetZero()
		case rng.IntN(3) == 0 || depth >= 6:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			s := reflect.MakeSlice(v.Type(), 1+rng.IntN(2), 2)
			for i := range s.Len() {
				g.fill(s.Index(i), depth+1)
			}
			v.Set(s)
		}
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return
		}
		switch {
		case rng.IntN(3) == 0:
			v.SetZero()
		case rng.IntN(3) == 0 || depth >= 6:
			v.Set(reflect.MakeMap(v.Type()))
		default:
			m := reflect.MakeMap(v.Type())
			for range 1 + rng.IntN(2) {
				e := reflect.New(v.Type().Elem()).Elem()
				g.fill(e, depth+1)
				m.SetMapIndex(reflect.ValueOf([]string{"x", "y", "Ready"}[rng.IntN(3)]).Convert(v.Type().Key()), e)
			}
			v.Set(m)
		}
	}
}

// shape is a Go type the differential tests run on.
type shape struct {
	name string
	new  func() client.Object
	// status is the Go field of the status (none: "").
	status string
	// roundTrips: the map server can decode what it stores into the type.
	roundTrips bool
	// oddConditions: status.conditions is no list of objects (another
	// writer does not add a condition there).
	oddConditions bool
	// minDirect is how many of the random pairs must be direct writes (a
	// type with a top-level field that is no struct has none).
	minDirect int
}

var shapes = []shape{
	{"plain", func() client.Object { return &shapeObj[plainStatus]{} }, "Status", true, false, 100},
	{"raw", func() client.Object { return &shapeObj[rawStatus]{} }, "Status", true, false, 100},
	{"embed", func() client.Object { return &shapeObj[embedStatus]{} }, "Status", true, false, 100},
	{"omitzero", func() client.Object { return &shapeObj[omitzeroStatus]{} }, "Status", true, false, 100},
	{"numbers", func() client.Object { return &shapeObj[numStatus]{} }, "Status", true, false, 100},
	{name: "mapConditions", new: func() client.Object { return &shapeObj[mapCondStatus]{} }, status: "Status", roundTrips: true, oddConditions: true, minDirect: 100},
	{name: "stringConditions", new: func() client.Object { return &shapeObj[stringCondStatus]{} }, status: "Status", roundTrips: true, oddConditions: true, minDirect: 100},
	{"myConditions", func() client.Object { return &shapeObj[myCondStatus]{} }, "Status", true, false, 100},
	{name: "structConditions", new: func() client.Object { return &shapeObj[structCondStatus]{} }, status: "Status", roundTrips: true, oddConditions: true, minDirect: 50},
	{"marshal", func() client.Object { return &shapeObj[marshalStatus]{} }, "Status", true, false, 100},
	{"signedZero", func() client.Object { return &shapeObj[ratioStatus]{} }, "Status", false, false, 100},
	{"generationMethod", func() client.Object { return &generationObj{} }, "Status", true, false, 100},
	{"state", func() client.Object { return &stateObj{} }, "State", true, false, 50},
	{"bare", func() client.Object { return &bareObj{} }, "", true, false, 0},
	{"Pod", func() client.Object { return &corev1.Pod{} }, "Status", true, false, 100},
	{"Deployment", func() client.Object { return &appsv1.Deployment{} }, "Status", true, false, 100},
	{"Namespace", func() client.Object { return &corev1.Namespace{} }, "Status", true, false, 100},
	{"Service", func() client.Object { return &corev1.Service{} }, "Status", true, false, 100},
	{"ptrStatus", func() client.Object { return &ptrStatusObj{} }, "Status", true, false, 0},
	{"selfConverting", func() client.Object { return &shapeObj[selfStatus]{} }, "Status", false, false, 0},
	{"PartialObjectMetadata", func() client.Object { return &metav1.PartialObjectMetadata{} }, "", true, false, 50},
	{"ConfigMap", func() client.Object { return &corev1.ConfigMap{} }, "", true, false, 0},
}

// randomShapePair is a snapshot of sh and the object as changed: a
// finalizer added, removed or reordered, a status set (the snapshot's
// mostly empty), both, another field; the object sharing the snapshot's
// maps and lists (finalizer.Handler's copy) or a deep copy.
func randomShapePair(sh shape, rng *rand.Rand, bigUints bool) (before, after client.Object) {
	g := shapeGen{rng: rng, oddNumbers: rng.IntN(3) == 0, bigUints: bigUints}
	before = sh.new()
	bv := reflect.ValueOf(before).Elem()
	bv.FieldByName("TypeMeta").Set(reflect.ValueOf(metav1.TypeMeta{APIVersion: "test.steady.dev/v1", Kind: "Shape"}))
	md := randomMeta(rng)
	if rng.IntN(10) == 0 {
		md.ResourceVersion = ""
	}
	if rng.IntN(5) == 0 {
		md.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate}}
	}
	bv.FieldByName("ObjectMeta").Set(reflect.ValueOf(md))
	if sh.status != "" && rng.IntN(4) == 0 {
		g.fill(bv.FieldByName(sh.status), 0)
	}
	shared := rng.IntN(3) == 0
	if shared {
		after = object.Shallow(before)
		after.SetFinalizers(append([]string(nil), before.GetFinalizers()...))
	} else {
		after = before.DeepCopyObject().(client.Object)
	}
	av := reflect.ValueOf(after).Elem()
	amd := av.FieldByName("ObjectMeta").Addr().Interface().(*metav1.ObjectMeta)
	if rng.IntN(2) == 0 {
		changeMeta(rng, amd)
	}
	if rng.IntN(6) == 0 {
		amd.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "other"}}
	}
	if sh.status != "" && rng.IntN(2) == 0 && !shared {
		st := av.FieldByName(sh.status)
		if rng.IntN(3) == 0 {
			st.SetZero()
		}
		g.fill(st, 0)
	}
	if rng.IntN(10) == 0 && !shared {
		if s := av.FieldByName("Spec"); s.IsValid() {
			g.fill(s, 0)
		}
	}
	return before, after
}

// checkDirectAsPlan is TestDirectWritesAsThePlan's check of one pair.
func checkDirectAsPlan(t *testing.T, name string, before, after client.Object, o Options) (planned bool) {
	t.Helper()
	if unchanged(before, after, o) {
		return false
	}
	b0, a0 := deepCopyValue(reflect.ValueOf(before).Elem()), deepCopyValue(reflect.ValueOf(after).Elem())
	p, _, same := (&Writer{}).planDirect(before, after, o)
	if !sameValue(reflect.ValueOf(before).Elem(), b0) || !sameValue(reflect.ValueOf(after).Elem(), a0) {
		t.Fatalf("%s: planDirect changed an object", name)
	}
	if same {
		t.Fatalf("%s: planDirect found nothing to write, unchanged something", name)
	}
	if p == nil {
		return false
	}
	bm, am, err := toMaps(before, after, o)
	if err != nil {
		t.Fatalf("%s: direct %s write, the engine's maps: %v", name, p.step(), err)
	}
	parts, err := plan(bm, am, after, o)
	if err != nil {
		t.Fatalf("%s: direct %s write, the plan: %v", name, p.step(), err)
	}
	if len(parts) != 1 || parts[0].status != p.status {
		t.Fatalf("%s: direct %s write, the plan has %d parts", name, p.step(), len(parts))
	}
	body, lock, stale, err := parts[0].body(bm, o)
	if err != nil || stale != "" {
		t.Fatalf("%s: the plan's body: %v, stale %q", name, err, stale)
	}
	checkFirst(t, fmt.Sprintf("%s (%+v)", name, o), p, body, lock)
	st := &state{}
	if err := fillDirect(p, before, after, st, o); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	again, _, _, err := p.body(st.m, o)
	if err != nil || !sameBody(again, body) {
		t.Fatalf("%s: filled, the part's body is %s, want %s (%v)", name, js2(again), js2(body), err)
	}
	return true
}

// sameBody is EqualJSON of two maps, or their printing where they hold a
// NaN (which is no JSON: a body holding one is refused when sent, an
// object holding one is the caller's, left as it was).
func sameBody(a, b map[string]any) bool {
	if object.CheckJSON(a) != nil || object.CheckJSON(b) != nil {
		return fmt.Sprint(a) == fmt.Sprint(b)
	}
	return object.EqualJSON(a, b)
}

// TestDirectWritesAsThePlanOnShapes is TestDirectWritesAsThePlan over the
// shapes: custom statuses of every kind and k8s.io/api types.
func TestDirectWritesAsThePlanOnShapes(t *testing.T) {
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			var direct int
			for seed := range uint64(1500 * directScale) {
				rng := rand.New(rand.NewPCG(seed, 29))
				before, after := randomShapePair(sh, rng, true)
				o := randomOptions(rng)
				if checkDirectAsPlan(t, fmt.Sprintf("%s seed %d", sh.name, seed), before, after, o) {
					direct++
				}
			}
			t.Logf("%d direct", direct)
			if direct < sh.minDirect {
				t.Fatalf("only %d direct writes", direct)
			}
		})
	}
	checkZeroStatusesIntact(t)
}

// checkZeroStatusesIntact fails where a cached zero status map is no
// longer the conversion of the zero status (someone wrote into it).
func checkZeroStatusesIntact(t *testing.T) {
	t.Helper()
	layouts.Range(func(k, v any) bool {
		l := v.(*typedLayout)
		if !l.ok || l.status < 0 {
			return true
		}
		st := k.(reflect.Type).Field(l.fields[l.status].i).Type
		got := l.zero.get(st) // through its sync.Once: never a race
		if got == nil {
			return true
		}
		want, err := object.ToUnstructured(reflect.New(st).Interface())
		if err != nil {
			t.Fatal(err)
		}
		delete(want, "conditions")
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v: the cached zero status is %v, want %v", k, got, want)
		}
		return true
	})
}

// storedOf is obj as the map server stores it: decoded JSON.
func storedOf(t *testing.T, obj client.Object) map[string]any {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil // a NaN: no object the API server could hold
	}
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return u.Object
}

// patchOutcome is what one Patch did, for comparing direct writes with the
// engine.
type patchOutcome struct {
	bodies []string
	gets   int
	stored map[string]any
	obj    map[string]any
	res    string
	base   any
	err    string
	// planned: a direct write was planned (else nothing was run)
	planned bool
}

// patchOnce runs one Patch of a random pair (made by pair from rng)
// against a map server (conflicts with another writer, no status
// subresource, gone) with or without direct writes, and checks that the
// snapshot is left as it was. oddConditions: the pair's type has no list
// of conditions of metav1's shape, where the other writer adds none.
func patchOnce(t *testing.T, rng *rand.Rand, pair func(*rand.Rand) (client.Object, client.Object), oddConditions, engineOnly bool) patchOutcome {
	t.Helper()
	before, after := pair(rng)
	o := randomOptions(rng)
	if p, _, same := (&Writer{}).planDirect(before, after, o); p == nil && !same {
		return patchOutcome{} // no direct write (or finding) to compare
	}
	b0 := deepCopyValue(reflect.ValueOf(before).Elem())
	// What the object holds before Patch (its maps and lists, which the
	// caller may share), and a copy to tell whether any of it changed.
	held := reflect.ValueOf(object.Shallow(after)).Elem()
	a0 := deepCopyValue(held)
	stored := storedOf(t, before)
	if stored == nil {
		return patchOutcome{}
	}
	s := &mapServer{stored: stored, rv: 7, noStatus: rng.IntN(4) == 0, conflicts: rng.IntN(3)}
	s.other = func(m map[string]any) {
		st, _ := m["status"].(map[string]any)
		c, had := st["conditions"]
		foreignChange(rng, m)
		if st, _ := m["status"].(map[string]any); oddConditions && st != nil {
			if delete(st, "conditions"); had {
				st["conditions"] = c
			}
		}
	}
	gone := rng.IntN(10) == 0
	gets := 0
	c := s.client()
	w := Writer{Client: c, Sleep: func(context.Context, time.Duration) error { return nil }, engineOnly: engineOnly}
	w.Reader = readerFunc(func(ctx context.Context, key client.ObjectKey, obj client.Object) error {
		gets++
		if gone {
			return apierrors.NewNotFound(schema.GroupResource{Resource: "things"}, key.Name)
		}
		return c.Get(ctx, key, obj)
	})
	if rng.IntN(4) == 0 {
		// Re-read through the client, which may lag: a read that shows
		// the conflicting state again is repeated.
		w.Reader = nil
	}
	res, err := w.Patch(context.Background(), before, after, o)
	out := patchOutcome{bodies: s.bodies, gets: gets, stored: s.stored, res: fmt.Sprintf("gone=%v wrote=%v stale=%q", res.Gone, res.Wrote, res.Stale), planned: true}
	if err != nil {
		out.err = err.Error()
	}
	if res.StatusBase != nil {
		out.base = nested(res.StatusBase, conditionsPath)
	}
	if out.obj, err = object.ToMap(after); err != nil {
		t.Fatal(err)
	}
	if !sameValue(reflect.ValueOf(before).Elem(), b0) {
		t.Fatalf("Patch changed the snapshot (engine only %v)", engineOnly)
	}
	if !sameValue(held, a0) {
		t.Fatalf("Patch wrote into what the object held (engine only %v)", engineOnly)
	}
	if (out.err != "" || len(res.Wrote) == 0) && !sameValue(reflect.ValueOf(after).Elem(), a0) {
		t.Fatalf("Patch wrote nothing, or failed, and changed the object (engine only %v)", engineOnly)
	}
	return out
}

// compareOutcomes fails where a Patch with direct writes (got) did not
// what the engine alone did (want): the requests and their bodies, the
// reads, the result and error, the stored object and the caller's.
func compareOutcomes(t *testing.T, name string, got, want patchOutcome) {
	t.Helper()
	if len(got.bodies) != len(want.bodies) {
		t.Fatalf("%s: direct sent %d bodies, the engine %d:\n%v\n%v", name, len(got.bodies), len(want.bodies), got.bodies, want.bodies)
	}
	for i := range got.bodies {
		if !object.EqualJSON(js(got.bodies[i]), js(want.bodies[i])) {
			t.Fatalf("%s: body %d: direct %s, engine %s", name, i, got.bodies[i], want.bodies[i])
		}
	}
	if got.gets != want.gets || got.res != want.res || got.err != want.err {
		t.Fatalf("%s: direct %d reads, %s, %q; engine %d reads, %s, %q", name, got.gets, got.res, got.err, want.gets, want.res, want.err)
	}
	if !sameBody(got.stored, want.stored) || !sameBody(got.obj, want.obj) {
		t.Fatalf("%s: stored or the caller's object differ:\n%v\n%v\n%v\n%v", name, got.stored, want.stored, got.obj, want.obj)
	}
	if !object.EqualJSON(got.base, want.base) {
		t.Fatalf("%s: StatusBase's conditions: direct %v, engine %v", name, got.base, want.base)
	}
}

// TestDirectPatchesAsTheEngineOnShapes is TestDirectPatchesAsTheEngine
// over the shapes, the snapshot sometimes sharing its maps and lists with
// the object; Patch never changes the snapshot.
func TestDirectPatchesAsTheEngineOnShapes(t *testing.T) {
	for _, sh := range shapes {
		if !sh.roundTrips {
			continue
		}
		t.Run(sh.name, func(t *testing.T) {
			var direct, retried int
			for seed := range uint64(150 * directScale) {
				pair := func(rng *rand.Rand) (client.Object, client.Object) { return randomShapePair(sh, rng, false) }
				patch := func(engineOnly bool) patchOutcome {
					return patchOnce(t, rand.New(rand.NewPCG(seed, 31)), pair, sh.oddConditions, engineOnly)
				}
				got := patch(false)
				if !got.planned {
					continue
				}
				want := patch(true)
				if !got.planned {
					continue
				}
				direct++
				if len(want.bodies) > 1 {
					retried++
				}
				compareOutcomes(t, fmt.Sprintf("%s seed %d", sh.name, seed), got, want)
			}
			t.Logf("%d direct, %d retried", direct, retried)
			if direct < sh.minDirect/10 || retried < sh.minDirect/40 {
				t.Fatalf("too few cases: %d direct, %d retried", direct, retried)
			}
		})
	}
	checkZeroStatusesIntact(t)
}

// TestDirectWritesConcurrently plans and patches objects of new types from
// many goroutines at once (the layouts and zero statuses are made while
// others read them): the race detector's test; and the cached zero
// statuses stay as converted.
func TestDirectWritesConcurrently(t *testing.T) {
	type fresh1 struct{ plainStatus }
	type fresh2 struct{ rawStatus }
	news := []func() client.Object{
		func() client.Object { return &shapeObj[fresh1]{} },
		func() client.Object { return &shapeObj[fresh2]{} },
		func() client.Object { return &shapeObj[struct{ numStatus }]{} },
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed := range uint64(60) {
				sh := shape{name: "fresh", new: news[(int(seed)+i)%len(news)], status: "Status", roundTrips: true}
				rng := rand.New(rand.NewPCG(seed, uint64(i)))
				before, after := randomShapePair(sh, rng, false)
				o := randomOptions(rng)
				_, _, _ = (&Writer{}).planDirect(before, after, o)
				stored := storedOf(t, before)
				if stored == nil {
					continue
				}
				s := &mapServer{stored: stored, rv: 7, conflicts: rng.IntN(2)}
				c := s.client()
				w := Writer{Client: c, Sleep: func(context.Context, time.Duration) error { return nil }}
				if _, err := w.Patch(context.Background(), before, after, o); err != nil && !apierrors.IsConflict(err) {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	checkZeroStatusesIntact(t)
}

// signedRatio converts itself to its number as a string, the sign of a
// zero included ("-0"), as a type that formats its value does.
type signedRatio struct{ V float64 }

func (r signedRatio) MarshalJSON() ([]byte, error) {
	return json.Marshal(strconv.FormatFloat(r.V, 'g', -1, 64))
}

type ratioStatus struct {
	Ratio signedRatio `json:"ratio"`
	Phase string      `json:"phase,omitempty"`
}

// TestDirectStatusOverANegativeZero: a snapshot's status holding a -0,
// which reflect's IsZero takes for 0 but a type of its own conversion
// tells apart, is no zero status: the first status write is the plan's
// (which leaves the unchanged ratio out).
func TestDirectStatusOverANegativeZero(t *testing.T) {
	before := &shapeObj[ratioStatus]{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", ResourceVersion: "7"}}
	before.Status.Ratio.V = math.Copysign(0, -1)
	after := before.DeepCopyObject().(*shapeObj[ratioStatus])
	after.Status.Phase = "Ready"
	checkDirectAsPlan(t, "a -0 in the snapshot's status", before, after, Options{})
}

// generationObj reports a generation of its own (its method, not
// metadata.generation): plan sets status.observedGeneration to it.
type generationObj struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            plainStatus `json:"status,omitempty"`
}

func (o *generationObj) DeepCopyObject() runtime.Object { return deepCopyOf(o) }
func (o *generationObj) GetGeneration() int64           { return o.ObjectMeta.Generation + 10 }

// TestDirectStatusObservesGetGeneration: the observedGeneration of a
// direct first status is the object's GetGeneration, as plan sets it.
func TestDirectStatusObservesGetGeneration(t *testing.T) {
	before := &generationObj{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", ResourceVersion: "7", Generation: 2}}
	after := before.DeepCopyObject().(*generationObj)
	after.Status.Phase = "Ready"
	if !checkDirectAsPlan(t, "GetGeneration", before, after, Options{ObservedGeneration: true}) {
		t.Fatal("no direct write")
	}
}

// directScale multiplies the seeds of the shape tests (STEADY_DIRECT_SCALE,
// for a longer search by hand).
var directScale = func() uint64 {
	n, err := strconv.ParseUint(os.Getenv("STEADY_DIRECT_SCALE"), 10, 64)
	if err != nil || n == 0 {
		return 1
	}
	return n
}()

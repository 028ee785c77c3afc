package object

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/randfill"

	"github.com/steadyk8s/steady/internal/testapi"
)

// Edge types: every tag and kind rule of apimachinery's converter.

type EdgeEmb struct {
	E1     string `json:"e1"`
	Shadow string `json:"shadow,omitempty"`
}

type EdgePtrEmb struct {
	P1     int    `json:"p1,omitempty"`
	Shadow string `json:"shadow"`
}

// EdgeBarePtrEmb is embedded as a pointer without omitempty: nil leaves
// nothing, and the fields after it are still converted.
type EdgeBarePtrEmb struct {
	After string `json:"after"`
}

type EdgeUntaggedEmb struct {
	U1 bool
}

type edgeInner struct {
	A string          `json:"a,omitempty"`
	B *int8           `json:"b"`
	C []edgeInner     `json:"c,omitempty"`
	D map[string]uint `json:"d"`
}

// edgeMarshalVal is of kind string with its own value-receiver MarshalJSON:
// raw as a struct field, its MarshalJSON elsewhere.
type edgeMarshalVal string

func (e edgeMarshalVal) MarshalJSON() ([]byte, error) { return json.Marshal("m:" + string(e)) }

// edgeMarshalPtr has a pointer-receiver MarshalJSON: found where the value
// is addressable (a field, a list item), not in a map value.
type edgeMarshalPtr struct{ X int }

func (m *edgeMarshalPtr) MarshalJSON() ([]byte, error) { return json.Marshal(map[string]int{"x": m.X}) }

// edgeConverter converts itself, with an error for odd values.
type edgeConverter struct{ N int64 }

func (c edgeConverter) MarshalJSON() ([]byte, error) { return json.Marshal(c.N) }
func (c edgeConverter) ToUnstructuredWithError() (any, error) {
	if c.N%7 == 0 {
		return nil, fmt.Errorf("edgeConverter %d", c.N)
	}
	return c.N * 2, nil
}

type edgeZeroer struct {
	N int `json:"n"`
}

func (z edgeZeroer) IsZero() bool { return z.N%2 == 0 }

type edgePtrZeroer struct {
	N int `json:"n"`
}

func (z *edgePtrZeroer) IsZero() bool { return z.N%3 == 0 }

type edgeKey string

type edgeBytes []byte

type edgeLabels map[string]string

type edgeNode struct {
	Name     string      `json:"name"`
	Next     *edgeNode   `json:"next,omitempty"`
	Children []edgeNode  `json:"children"`
	Any      interface{} `json:"any,omitempty"`
}

type edgeAll struct {
	metav1.TypeMeta `json:",inline"`
	EdgeEmb
	*EdgePtrEmb     `json:",omitempty"`
	EdgeUntaggedEmb `json:""`
	*EdgeBarePtrEmb

	Untagged      string
	UntaggedInt   int
	NamedInline   EdgeEmb                       `json:",inline"` // not embedded: named "NamedInline"
	Skipped       chan int                      `json:"-"`
	SkippedComma  string                        `json:"-,"` // apimachinery skips it too
	Shadow        string                        `json:"shadow"`
	OmitPtr       *edgeInner                    `json:"omitPtr,omitempty"`
	OmitStruct    edgeInner                     `json:"omitStruct,omitempty"`
	OmitSlice     []string                      `json:"omitSlice,omitempty"`
	OmitMap       map[string]string             `json:"omitMap,omitempty"`
	OmitStr       string                        `json:"omitStr,omitempty"`
	OmitBool      bool                          `json:"omitBool,omitempty"`
	OmitI8        int8                          `json:"omitI8,omitempty"`
	OmitU16       uint16                        `json:"omitU16,omitempty"`
	OmitF32       float32                       `json:"omitF32,omitempty"`
	OmitF64       float64                       `json:"omitF64,omitempty"`
	OmitAny       interface{}                   `json:"omitAny,omitempty"`
	OmitBytes     []byte                        `json:"omitBytes,omitempty"`
	ZeroStruct    edgeInner                     `json:"zeroStruct,omitzero"`
	ZeroPtr       *edgeInner                    `json:"zeroPtr,omitzero"`
	ZeroTime      metav1.Time                   `json:"zeroTime,omitzero"`
	ZeroZeroer    edgeZeroer                    `json:"zeroZeroer,omitzero"`
	ZeroPtrZeroer edgePtrZeroer                 `json:"zeroPtrZeroer,omitzero"`
	ZeroPZPtr     *edgePtrZeroer                `json:"zeroPZPtr,omitzero"`
	ZeroInt       int                           `json:"zeroInt,omitzero"`
	ZeroSlice     []int                         `json:"zeroSlice,omitzero"`
	BothOmit      map[string]int                `json:"bothOmit,omitempty,omitzero"`
	I8            int8                          `json:"i8"`
	I16           int16                         `json:"i16"`
	I32           int32                         `json:"i32"`
	I64           int64                         `json:"i64"`
	U             uint                          `json:"u"`
	U8            uint8                         `json:"u8"`
	U16           uint16                        `json:"u16"`
	U32           uint32                        `json:"u32"`
	U64           uint64                        `json:"u64"`
	F32           float32                       `json:"f32"`
	F64           float64                       `json:"f64"`
	Bytes         []byte                        `json:"bytes"`
	NamedBytes    edgeBytes                     `json:"namedBytes"`
	PtrBytes      *[]byte                       `json:"ptrBytes"`
	U64s          []uint64                      `json:"u64s"`
	U8Ptrs        []*uint8                      `json:"u8ptrs"`
	F32s          []float32                     `json:"f32s"`
	UMap          map[string]uint16             `json:"umap"`
	KeyMap        map[edgeKey]int               `json:"keyMap"`
	Labels        edgeLabels                    `json:"labels"`
	PtrMap        map[string]*edgeInner         `json:"ptrMap"`
	StructMap     map[string]edgeInner          `json:"structMap"`
	ListMap       map[string][]string           `json:"listMap"`
	AnyMap        map[string]interface{}        `json:"anyMap"`
	MapList       []map[string]string           `json:"mapList"`
	PP            **int                         `json:"pp"`
	PSlice        *[]string                     `json:"pslice"`
	PMap          *map[string]string            `json:"pmap"`
	Any           interface{}                   `json:"any"`
	AnyList       []interface{}                 `json:"anyList"`
	Stringer      fmt.Stringer                  `json:"stringer"`
	MVal          edgeMarshalVal                `json:"mval"`
	MVals         []edgeMarshalVal              `json:"mvals"`
	MValMap       map[string]edgeMarshalVal     `json:"mvalMap"`
	MValPtr       *edgeMarshalVal               `json:"mvalPtr"`
	MPtr          edgeMarshalPtr                `json:"mptr"`
	MPtrs         []edgeMarshalPtr              `json:"mptrs"`
	MPtrPtr       *edgeMarshalPtr               `json:"mptrPtr"`
	Conv          edgeConverter                 `json:"conv"`
	ConvMap       map[string]edgeConverter      `json:"convMap"`
	Time          metav1.Time                   `json:"time"`
	TimePtr       *metav1.Time                  `json:"timePtr"`
	Times         []metav1.Time                 `json:"times"`
	TimeMap       map[string]metav1.Time        `json:"timeMap"`
	Micro         metav1.MicroTime              `json:"micro"`
	Dur           metav1.Duration               `json:"dur"`
	Qty           resource.Quantity             `json:"qty"`
	QtyPtr        *resource.Quantity            `json:"qtyPtr"`
	Resources     corev1.ResourceList           `json:"resources"`
	IOS           intstr.IntOrString            `json:"ios"`
	IOSPtr        *intstr.IntOrString           `json:"iosPtr"`
	IOSMap        map[string]intstr.IntOrString `json:"iosMap"`
	Raw           runtime.RawExtension          `json:"raw"`
	Fields        *metav1.FieldsV1              `json:"fields"`
	JSON          apiextensionsv1.JSON          `json:"json"`
	Node          edgeNode                      `json:"node"`
	Meta          metav1.ObjectMeta             `json:"meta"`
}

// edgeMapPtr errors in apimachinery when its map is not empty: a map
// value's pointer-receiver MarshalJSON is not found.
type edgeMapPtr struct {
	M map[string]edgeMarshalPtr `json:"m"`
	U []uint                    `json:"u"` // an error past math.MaxInt64
}

// Types the plan leaves to apimachinery.
type (
	fallbackUnexported struct {
		A string `json:"a"`
		b string
	}
	fallbackArray struct {
		A [2]int `json:"a"`
	}
	fallbackChan struct {
		C chan int `json:"c,omitempty"`
	}
	fallbackIntKey struct {
		M map[int]string `json:"m"`
	}
	fallbackComplex struct {
		C complex64 `json:"c"`
	}
)

type fallbackEmbeddedExportedMap struct {
	EdgeLabels3
}

type EdgeLabels3 map[string]string

type fallbackSelfConverting struct {
	A string `json:"a"`
}

func (fallbackSelfConverting) MarshalJSON() ([]byte, error) { return []byte(`{"x":1}`), nil }

var _ = fallbackUnexported{}.b

func randString(c randfill.Continue) string {
	switch c.Intn(6) {
	case 0:
		return ""
	case 1:
		return "\xff\xfe" + c.String(3) // not UTF-8
	case 2:
		return "<a&b>\u2028"
	}
	return c.String(8)
}

func randJSONValue(c randfill.Continue, depth int) any {
	k := c.Intn(9)
	if depth > 2 && k >= 6 {
		k = 0
	}
	switch k {
	case 0:
		return nil
	case 1:
		return c.Bool()
	case 2:
		return c.Int63() - c.Int63()
	case 3:
		return c.Float64() * 1e6
	case 4:
		return c.String(5)
	case 5:
		if rare(c) {
			return uint64(math.MaxInt64) + uint64(c.Intn(3)) // past int64 in a list
		}
		return uint64(c.Intn(1000))
	case 6:
		m := map[string]any{}
		for range c.Intn(3) {
			m[c.String(3)] = randJSONValue(c, depth+1)
		}
		return m
	case 7:
		l := make([]any, c.Intn(3))
		for i := range l {
			l[i] = randJSONValue(c, depth+1)
		}
		return l
	}
	return json.Number("1.5")
}

func randRawJSON(c randfill.Continue) []byte {
	switch c.Intn(8) {
	case 0:
		return nil
	case 1, 2:
		if rare(c) {
			return []byte{} // an error in a RawExtension
		}
		if rare(c) {
			return []byte(`{"bad":`)
		}
		return []byte(`"s"`)
	case 3:
		return []byte(`null`)
	case 4:
		return []byte(`12345678901234567890`)
	case 5:
		return []byte(`-1.5e3`)
	}
	v := randJSONValue(c, 0)
	if _, ok := v.(uint64); ok {
		v = "u"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`"x"`)
	}
	return b
}

// fillFuncs fill the types randfill cannot (interfaces, unexported
// fields) with values that reach every path of their conversion.
func fillFuncs() []any {
	return []any{
		func(s *string, c randfill.Continue) { *s = randString(c) },
		func(*chan int, randfill.Continue) {},
		func(e *edgeConverter, c randfill.Continue) { *e = randConverter(c) },
		func(u *uint, c randfill.Continue) {
			if c.Intn(300) == 0 { // past int64: an error in a list or map
				*u = uint(c.Uint64())
			} else {
				*u = uint(c.Intn(300))
			}
		},
		func(q *resource.Quantity, c randfill.Continue) {
			switch c.Intn(5) {
			case 0:
				*q = resource.Quantity{}
			case 1:
				*q = *resource.NewMilliQuantity(c.Int63n(100000), resource.DecimalSI)
			case 2:
				*q = *resource.NewQuantity(c.Int63n(1<<40), resource.BinarySI)
			case 3:
				*q = resource.MustParse(fmt.Sprintf("%de%d", c.Intn(1000), c.Intn(9)))
			default:
				*q = *resource.NewScaledQuantity(c.Int63n(1000), resource.Scale(c.Intn(12)-6))
			}
		},
		func(is *intstr.IntOrString, c randfill.Continue) {
			switch c.Intn(5) {
			case 0:
				*is = intstr.FromInt32(c.Int31() - c.Int31())
			case 1, 2:
				*is = intstr.FromString(randString(c))
			case 3:
				*is = intstr.IntOrString{}
			default:
				if rare(c) {
					*is = intstr.IntOrString{Type: intstr.Type(2 + c.Intn(3)), StrVal: "x"} // an error
				} else {
					*is = intstr.FromInt(c.Intn(100))
				}
			}
		},
		func(t *metav1.Time, c randfill.Continue) {
			if c.Intn(4) == 0 {
				*t = metav1.Time{}
				return
			}
			*t = metav1.Unix(c.Int63n(4e9), c.Int63n(1e9)).Rfc3339Copy()
			if c.Bool() {
				*t = metav1.NewTime(t.Add(time.Duration(c.Intn(1e9))).In(time.FixedZone("x", 3600*c.Intn(5))))
			}
		},
		func(t *metav1.MicroTime, c randfill.Continue) {
			if c.Intn(4) == 0 {
				*t = metav1.MicroTime{}
				return
			}
			*t = metav1.NewMicroTime(time.Unix(c.Int63n(4e9), c.Int63n(1e9)))
		},
		func(r *runtime.RawExtension, c randfill.Continue) {
			*r = runtime.RawExtension{Raw: randRawJSON(c)}
			if r.Raw == nil && c.Bool() {
				r.Object = &metav1.Status{Message: c.String(4), Code: c.Int31()}
			}
		},
		func(o *runtime.Object, c randfill.Continue) {
			if c.Bool() {
				*o = &metav1.Status{Message: c.String(4)}
			}
		},
		func(f *metav1.FieldsV1, c randfill.Continue) {
			raw := randRawJSON(c)
			if len(raw) > 0 && raw[0] == '{' || c.Bool() {
				*f = metav1.FieldsV1{Raw: raw}
				return
			}
			*f = metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{}}}`)}
		},
		func(j *apiextensionsv1.JSON, c randfill.Continue) { *j = apiextensionsv1.JSON{Raw: randRawJSON(c)} },
		func(j *apiextensionsv1beta1.JSON, c randfill.Continue) {
			*j = apiextensionsv1beta1.JSON{Raw: randRawJSON(c)}
		},
		func(a *any, c randfill.Continue) { *a = randAny(c) },
		func(s *fmt.Stringer, c randfill.Continue) {
			switch c.Intn(3) {
			case 0:
				*s = nil
			case 1:
				*s = (*resource.Quantity)(nil)
			default:
				q := resource.MustParse("1Gi")
				*s = &q
			}
		},
		func(u *uint64, c randfill.Continue) {
			if c.Intn(300) == 0 { // past int64: an error in a list or map
				*u = c.Uint64()
			} else {
				*u = uint64(c.Intn(300))
			}
		},
	}
}

// randAny is an interface's content of the kinds that reach every path.
func randAny(c randfill.Continue) any {
	switch c.Intn(12) {
	case 0:
		return nil
	case 1:
		return randJSONValue(c, 0)
	case 2:
		var in edgeInner
		c.Fill(&in)
		return in
	case 3:
		in := &edgeInner{}
		c.Fill(in)
		return in
	case 4:
		return (*edgeInner)(nil)
	case 5:
		var t metav1.Time
		c.Fill(&t)
		return t
	case 6:
		if rare(c) {
			return edgeMarshalPtr{X: c.Intn(9)} // not addressable: an error
		}
		return &edgeMarshalPtr{X: c.Intn(9)}
	case 7:
		return map[string]edgeMarshalVal{"k": edgeMarshalVal(c.String(2))}
	case 8:
		if rare(c) {
			return uint(c.Uint64())
		}
		return uint16(c.Intn(1 << 16))
	case 9:
		if rare(c) {
			return [2]int{1, 2} // no plan: the converter's error
		}
		return map[string][]int8{"a": {1, -1}}
	case 10:
		return []byte(c.String(3))
	}
	return randConverter(c)
}

// rare is true now and then: for the values that make a whole conversion
// fail, which would leave the rest of the object untested.
func rare(c randfill.Continue) bool { return c.Intn(300) == 0 }

func randConverter(c randfill.Continue) edgeConverter {
	if rare(c) {
		return edgeConverter{N: 7 * c.Int63n(10)} // an error
	}
	return edgeConverter{N: 7*c.Int63n(1000) + 1 + c.Int63n(6)}
}

// differs is where got and want differ, with the types ("" when equal).
func differs(path string, got, want any) string {
	if reflect.TypeOf(got) != reflect.TypeOf(want) {
		return fmt.Sprintf("%s: got %T %#v, apimachinery %T %#v", path, got, got, want, want)
	}
	switch w := want.(type) {
	case map[string]any:
		g := got.(map[string]any)
		if (g == nil) != (w == nil) {
			return fmt.Sprintf("%s: got nil %v, apimachinery nil %v", path, g == nil, w == nil)
		}
		keys := map[string]bool{}
		for k := range g {
			keys[k] = true
		}
		for k := range w {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			gv, gok := g[k]
			wv, wok := w[k]
			if gok != wok {
				return fmt.Sprintf("%s.%s: got present %v (%#v), apimachinery present %v (%#v)", path, k, gok, gv, wok, wv)
			}
			if d := differs(path+"."+k, gv, wv); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g := got.([]any)
		if (g == nil) != (w == nil) || len(g) != len(w) {
			return fmt.Sprintf("%s: got %#v, apimachinery %#v", path, g, w)
		}
		for i := range w {
			if d := differs(fmt.Sprintf("%s[%d]", path, i), g[i], w[i]); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("%s: got %#v, apimachinery %#v", path, got, want)
	}
	return ""
}

// checkSame converts obj both ways and fails where they differ; it
// reports whether the conversion failed (in both).
func checkSame(t *testing.T, obj any) bool {
	t.Helper()
	want, wantErr := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	got, gotErr := ToUnstructured(obj)
	// Both errors are apimachinery's (ours hands a failed conversion to
	// it), but which map entry fails first is random: only their presence
	// is compared.
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("%T: error %v, apimachinery %v", obj, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.MarshalIndent(got, "", " ")
		wj, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("%T: %s\nours:\n%s\napimachinery:\n%s", obj, differs("", got, want), gj, wj)
	}
	return wantErr != nil
}

func filler(seed int64) *randfill.Filler {
	return randfill.New().RandSource(rand.NewSource(seed)).NilChance(0.25).NumElements(0, 3).MaxDepth(12).Funcs(fillFuncs()...)
}

// schemeTypes is every Go type of client-go's scheme, apiextensions' and
// testapi's, once.
func schemeTypes(t *testing.T) []reflect.Type {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, apiextensionsv1beta1.AddToScheme, testapi.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[reflect.Type]bool{}
	var types []reflect.Type
	for _, rt := range s.AllKnownTypes() {
		if !seen[rt] {
			seen[rt] = true
			types = append(types, rt)
		}
	}
	sort.Slice(types, func(i, j int) bool { return types[i].String() < types[j].String() })
	return types
}

// TestToUnstructuredMatchesApimachinery converts random objects of every
// type of the schemes and of the edge types both ways: the same map, the
// same error.
func TestToUnstructuredMatchesApimachinery(t *testing.T) {
	// 40 objects of each of some 360 types in make test (under -race,
	// about a fifth of 200's time); STEADY_CONVERT_OBJECTS asks for more.
	n := 40
	if testing.Short() {
		n = 10
	}
	if v, err := strconv.Atoi(os.Getenv("STEADY_CONVERT_OBJECTS")); err == nil && v > 0 {
		n = v
	}
	types := schemeTypes(t)
	for _, v := range []any{edgeAll{}, edgeMapPtr{}, edgeNode{}, edgeInner{}, fallbackUnexported{}, fallbackArray{},
		fallbackChan{}, fallbackIntKey{}, fallbackComplex{}, fallbackEmbeddedExportedMap{}, fallbackSelfConverting{},
		metav1.ObjectMeta{}, metav1.Condition{}, testapi.WidgetStatus{}} {
		types = append(types, reflect.TypeOf(v))
	}
	// Two fields of one name (go vet refuses the tags in source): the
	// later one wins where it is not left out.
	types = append(types, reflect.StructOf([]reflect.StructField{
		{Name: "Dup1", Type: reflect.TypeFor[string](), Tag: `json:"dup"`},
		{Name: "Dup2", Type: reflect.TypeFor[*int](), Tag: `json:"dup,omitempty"`},
		{Name: "Dup3", Type: reflect.TypeFor[EdgeEmb](), Tag: `json:"dup,omitzero"`},
		{Name: "Dup4", Type: reflect.TypeFor[bool](), Tag: `json:"dup,omitempty"`},
	}))
	var fallback []string
	failed := map[reflect.Type]int{} // objects whose conversion failed
	for i, rt := range types {
		f := filler(int64(i))
		for j := range n {
			obj := reflect.New(rt)
			switch {
			case j == 0: // zero
			case j%10 == 1:
				randfill.New().RandSource(rand.NewSource(int64(j))).NilChance(0).NumElements(0, 0).MaxDepth(6).Funcs(fillFuncs()...).Fill(obj.Interface())
			default:
				f.Fill(obj.Interface())
			}
			if checkSame(t, obj.Interface()) {
				failed[rt]++
			}
		}
		if topPlan(rt) == nil {
			fallback = append(fallback, rt.String())
		}
	}
	t.Logf("%d types, %d left to apimachinery: %s", len(types), len(fallback), strings.Join(fallback, ", "))
	for rt, k := range failed {
		t.Logf("%s: %d of %d conversions failed", rt, k, n)
		if k > n/2 && !strings.Contains(rt.Name(), "fallback") && rt != reflect.TypeFor[edgeMapPtr]() {
			t.Errorf("%s: %d of %d conversions failed: the rest is not compared", rt, k, n)
		}
	}
	// The plans must be used where steady converts most, and the types
	// meant to fall back must.
	for _, v := range []any{&testapi.Widget{}, &corev1.Pod{}, &edgeAll{}, &edgeNode{}, &metav1.ObjectMeta{}, &apiextensionsv1.CustomResourceDefinition{}} {
		if topPlan(reflect.TypeOf(v).Elem()) == nil {
			t.Errorf("%T is left to apimachinery", v)
		}
	}
	for _, v := range []any{fallbackUnexported{}, fallbackArray{}, fallbackChan{}, fallbackIntKey{}, fallbackComplex{}, fallbackEmbeddedExportedMap{}, fallbackSelfConverting{}} {
		if topPlan(reflect.TypeOf(v)) != nil {
			t.Errorf("%T has a plan", v)
		}
	}
}

// TestToUnstructuredEdges pins what apimachinery does with the edge cases,
// and that ToUnstructured does the same.
func TestToUnstructuredEdges(t *testing.T) {
	three := 3
	pthree := &three
	obj := &edgeAll{
		EdgeEmb:     EdgeEmb{E1: "e", Shadow: "emb"},
		EdgePtrEmb:  &EdgePtrEmb{P1: 1, Shadow: "ptr"},
		Untagged:    "u",
		NamedInline: EdgeEmb{E1: "n"},
		Shadow:      "field",
		OmitStruct:  edgeInner{},
		U64:         5,
		Bytes:       []byte("hi"),
		NamedBytes:  edgeBytes{},
		OmitSlice:   []string{},
		MVal:        "raw",
		Conv:        edgeConverter{N: 1},
		MVals:       []edgeMarshalVal{"a"},
		MPtr:        edgeMarshalPtr{X: 2},
		PP:          &pthree,
		U64s:        []uint64{5},
		Labels:      edgeLabels{},
	}
	checkSame(t, obj)
	m, err := ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	if !learnRules() {
		t.Fatal("apimachinery converts the canary otherwise: no plans")
	}
	// A struct field's unsigned value: a uint64 in apimachinery v0.36, an
	// int64 in v0.37 (an error past math.MaxInt64).
	var u64 any = uint64(5)
	if rules.uintFieldInt64 {
		u64 = int64(5)
	}
	t.Logf("a struct field's unsigned value is a %T", u64)
	checkSame(t, &edgeAll{U64: math.MaxUint64})
	for k, want := range map[string]any{
		"e1": "e", "p1": int64(1), "shadow": "field", "Untagged": "u", "U1": false,
		"u64": u64, "bytes": "aGk=", "namedBytes": "", "mval": "raw",
		"mvals": []any{"m:a"}, "mptr": map[string]any{"x": int64(2)}, "pp": int64(3), "u64s": []any{int64(5)},
		"labels": map[string]any{}, "omitStruct": map[string]any{"b": nil, "d": nil}, "omitSlice": nil,
	} {
		got, ok := m[k]
		if k == "omitSlice" {
			if ok {
				t.Errorf("omitSlice: empty list not left out: %#v", got)
			}
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %#v, want %#v", k, got, want)
		}
	}
	if n, ok := m["NamedInline"].(map[string]any); !ok || n["e1"] != "n" {
		t.Errorf("NamedInline: %#v", m["NamedInline"])
	}
	for _, k := range []string{"-", "Skipped", "SkippedComma", "omitPtr", "omitMap", "omitAny"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s is not left out", k)
		}
	}
	// Errors: a map value's pointer-receiver MarshalJSON, an unsigned
	// value past int64 in a list.
	for _, obj := range []*edgeMapPtr{{M: map[string]edgeMarshalPtr{"a": {}}}, {U: []uint{math.MaxUint64}}, {U: []uint{math.MaxInt64 + 1}}} {
		checkSame(t, obj)
		if _, err := ToUnstructured(obj); err == nil {
			t.Errorf("%+v: no error", obj)
		}
	}
	if m, err := ToUnstructured(&edgeMapPtr{U: []uint{math.MaxInt64}}); err != nil || !reflect.DeepEqual(m["u"], []any{int64(math.MaxInt64)}) {
		t.Errorf("MaxInt64 in a list: %v, %v", m, err)
	}
	// An unstructured object: its content, not a copy, as apimachinery.
	u := &unstructured.Unstructured{Object: map[string]any{"a": "b"}}
	if got, _ := ToUnstructured(u); reflect.ValueOf(got).UnsafePointer() != reflect.ValueOf(u.Object).UnsafePointer() {
		t.Error("unstructured content copied")
	}
	for _, bad := range []any{(*corev1.Pod)(nil), corev1.Pod{}, &map[string]string{"a": "b"}} {
		want, wantErr := runtime.DefaultUnstructuredConverter.ToUnstructured(bad)
		got, err := ToUnstructured(bad)
		if !reflect.DeepEqual(got, want) || (err == nil) != (wantErr == nil) {
			t.Errorf("%T: %v %v, apimachinery %v %v", bad, got, err, want, wantErr)
		}
	}
}

// TestToUnstructuredConcurrent builds plans from many goroutines at once
// (-race).
func TestToUnstructuredConcurrent(t *testing.T) {
	type fresh struct {
		A map[string]*edgeNode `json:"a"`
		B []edgeAll            `json:"b"`
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := filler(int64(i))
			for range 20 {
				var v fresh
				f.Fill(&v)
				want, wantErr := runtime.DefaultUnstructuredConverter.ToUnstructured(&v)
				got, err := ToUnstructured(&v)
				if (err == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
					t.Errorf("differs: %s", differs("", got, want))
				}
			}
		}()
	}
	wg.Wait()
}

// FuzzToUnstructured fills the edge types from the fuzzer's bytes.
func FuzzToUnstructured(f *testing.F) {
	for _, s := range []string{"", "\x00", "seed", "\xff\xff\xff\xff\xff\xff\xff\xff", strings.Repeat("k8s", 40)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fill := randfill.NewFromGoFuzz(data).NilChance(0.3).NumElements(0, 2).MaxDepth(8).Funcs(fillFuncs()...)
		var a edgeAll
		fill.Fill(&a)
		checkSame(t, &a)
		var p corev1.Pod
		fill.Fill(&p)
		checkSame(t, &p)
	})
}

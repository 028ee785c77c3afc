package object

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// ToUnstructured is runtime.DefaultUnstructuredConverter.ToUnstructured
// (apimachinery v0.36.3, and v0.37.2) for obj, a pointer to a struct: the same map, the
// same value types in it, the same error, only faster. The first call for a
// Go type compiles a plan of its fields (JSON name, omitempty, omitzero, an
// encoder per kind) that later calls follow without looking anything up.
//
// A type the plan does not copy exactly is handed to the converter whole,
// decided once per type: one with an unexported field, an array, a
// channel, a function, a complex number, a map whose key is not a string,
// an inlined field that is not a struct or a pointer to one, a field
// tagged ",embed" (inlined by apimachinery v0.37 built with Go 1.27), an
// interface with methods that converts itself, or a top-level type that
// converts itself. So is any object whose conversion fails here (the converter
// gives its own error), an interface holding such a type, and anything
// that is not a non-nil pointer to a struct (an unstructured object, whose
// content the converter returns, not a copy).
//
// Where apimachinery's versions differ, it is asked once (learnRules): a
// struct field's unsigned value is a uint64 in v0.36, an int64 in v0.37;
// and should it convert a canary holding one of each rule below otherwise
// than the plans, it converts everything.
//
// What apimachinery does and this copies (see converter.go):
//   - A struct field of a scalar kind is taken as its kind, even where its
//     type converts itself (MarshalJSON). Elsewhere (a list item, a map
//     value, a pointer's target) the type's own conversion comes first,
//     and an unsigned value is an int64 (an error past math.MaxInt64).
//   - A field without a JSON name is named as in Go; an embedded one without
//     a name is inlined; "-" is left out; omitempty leaves out false, 0, "",
//     nil and empty lists and maps, never a struct; omitzero asks the type's
//     IsZero or reflect.
//   - A []byte is its base64 string, a nil pointer, list or map is a nil
//     entry (unless omitempty), a map key is the string it is.
//   - A type's own conversion (value.UnstructuredConverter, json.Marshaler)
//     is value.TypeReflectEntryOf's, called on a value as addressable as
//     apimachinery's: a map value or an interface's content is not, so a
//     pointer receiver's method is not found there.
func ToUnstructured(obj any) (map[string]any, error) {
	if _, ok := obj.(runtime.Unstructured); ok {
		return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	}
	sp := topPlan(v.Type().Elem())
	if sp == nil {
		return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	}
	m := sp.newMap()
	if err := sp.fill(v.UnsafePointer(), m); err != nil {
		// The converter's own error (or its map, should it succeed where
		// this failed): never one of ours.
		return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	}
	sp.sized(m)
	return m, nil
}

// errFallback stops a conversion that met what it has no plan for (a type
// in an interface): the converter does it whole.
var errFallback = errors.New("no plan for this type")

// errUnsupported marks a type that has no plan.
var errUnsupported = errors.New("unsupported type")

// node converts a value of one Go type, at p, to its unstructured form (nil
// for what apimachinery leaves unset).
type node struct {
	enc func(p unsafe.Pointer) (any, error)
}

// structPlan converts a struct's fields into a map, in field order (a later
// field of the same name overwrites, as in apimachinery).
type structPlan struct {
	fields []fieldPlan
	// last is the size of the map made last: the next one's size hint (a
	// map made larger than 8 costs more than twice one of 8).
	last atomic.Int32
}

// newMap is a map for the struct's fields, sized as the one before.
func (s *structPlan) newMap() map[string]any {
	return make(map[string]any, s.last.Load())
}

// sized notes the size of m, a map filled.
func (s *structPlan) sized(m map[string]any) {
	if n := int32(len(m)); n != s.last.Load() {
		s.last.Store(n)
	}
}

// fieldPlan is one field of a struct: where it is, its JSON name, when it
// is left out and how it is converted (enc) or inlined.
type fieldPlan struct {
	off       uintptr
	name      string
	typ       reflect.Type
	omitEmpty func(p unsafe.Pointer) bool
	omitZero  func(reflect.Value) bool
	enc       func(p unsafe.Pointer) (any, error)
	inline    *structPlan
	inlinePtr bool // inline is behind a pointer
}

func (s *structPlan) fill(p unsafe.Pointer, m map[string]any) error {
	for i := range s.fields {
		f := &s.fields[i]
		fp := unsafe.Add(p, f.off)
		if f.omitEmpty != nil && f.omitEmpty(fp) {
			continue
		}
		if f.omitZero != nil && f.omitZero(reflect.NewAt(f.typ, fp).Elem()) {
			continue
		}
		if f.inline != nil {
			if f.inlinePtr {
				if fp = *(*unsafe.Pointer)(fp); fp == nil {
					continue
				}
			}
			if err := f.inline.fill(fp, m); err != nil {
				return err
			}
			continue
		}
		v, err := f.enc(fp)
		if err != nil {
			return err
		}
		m[f.name] = v
	}
	return nil
}

// planKey is a type in a context: addressable or not (a map value, an
// interface's content), which decides whether a pointer receiver's
// conversion is found.
type planKey struct {
	t    reflect.Type
	addr bool
}

var (
	topPlans     sync.Map // reflect.Type → *structPlan, nil where the converter does it
	dynamicNodes sync.Map // planKey → *node, nil where the converter does it
)

func topPlan(t reflect.Type) *structPlan {
	if sp, ok := topPlans.Load(t); ok {
		return sp.(*structPlan)
	}
	var sp *structPlan
	if t.Kind() == reflect.Struct && !convertsItself(t) && learnRules() {
		b := newBuilder()
		if p, err := b.structPlan(t, true); err == nil {
			sp = p
		}
	}
	topPlans.Store(t, sp)
	return sp
}

func dynamicNode(t reflect.Type) *node {
	k := planKey{t, false}
	if n, ok := dynamicNodes.Load(k); ok {
		return n.(*node)
	}
	b := newBuilder()
	n, err := b.value(t, false)
	if err != nil {
		n = nil
	}
	dynamicNodes.Store(k, n)
	return n
}

// builder compiles the plans of one type tree, a node per type and context
// made once (a type may contain itself).
type builder struct {
	nodes   map[planKey]*node
	structs map[planKey]*structPlan
}

func newBuilder() *builder {
	return &builder{nodes: map[planKey]*node{}, structs: map[planKey]*structPlan{}}
}

// convertsItself reports whether apimachinery converts values of t with
// t's own methods.
func convertsItself(t reflect.Type) bool {
	return value.TypeReflectEntryOf(t).CanConvertToUnstructured()
}

var (
	stringType       = reflect.TypeFor[string]()
	timeType         = reflect.TypeFor[metav1.Time]()
	timePtrType      = reflect.TypeFor[*metav1.Time]()
	quantityType     = reflect.TypeFor[resource.Quantity]()
	intOrStringType  = reflect.TypeFor[intstr.IntOrString]()
	marshalerType    = reflect.TypeFor[json.Marshaler]()
	converterType    = reflect.TypeFor[value.UnstructuredConverter]()
	converterErrType = reflect.TypeFor[value.UnstructuredConverterWithError]()
)

// value is the node of apimachinery's toUnstructured for a value of type t.
func (b *builder) value(t reflect.Type, addr bool) (*node, error) {
	k := planKey{t, addr}
	if n, ok := b.nodes[k]; ok {
		return n, nil
	}
	n := &node{}
	b.nodes[k] = n
	enc, err := b.encoder(t, addr)
	if err != nil {
		return nil, err
	}
	n.enc = enc
	return n, nil
}

func (b *builder) encoder(t reflect.Type, addr bool) (func(unsafe.Pointer) (any, error), error) {
	if convertsItself(t) {
		return customEncoder(t, addr)
	}
	if enc := scalarEncoder(t, false); enc != nil {
		return enc, nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		elem, err := b.value(t.Elem(), true)
		if err != nil {
			return nil, err
		}
		return func(p unsafe.Pointer) (any, error) {
			q := *(*unsafe.Pointer)(p)
			if q == nil {
				return nil, nil
			}
			return elem.enc(q)
		}, nil
	case reflect.Slice:
		return b.sliceEncoder(t)
	case reflect.Map:
		return b.mapEncoder(t)
	case reflect.Struct:
		sp, err := b.structPlan(t, addr)
		if err != nil {
			return nil, err
		}
		return func(p unsafe.Pointer) (any, error) {
			m := sp.newMap()
			if err := sp.fill(p, m); err != nil {
				return nil, err
			}
			sp.sized(m)
			return m, nil
		}, nil
	case reflect.Interface:
		return interfaceEncoder(t), nil
	}
	// Arrays, channels, functions, complex numbers, uintptr, unsafe
	// pointers: apimachinery's error (or its nil, where omitted).
	return nil, errUnsupported
}

// customEncoder converts with t's own methods, as apimachinery does:
// value.TypeReflectEntryOf(t).ToUnstructured on a value as addressable as
// apimachinery's. The few types steady meets most are called directly,
// with the same method apimachinery finds.
func customEncoder(t reflect.Type, addr bool) (func(unsafe.Pointer) (any, error), error) {
	if t.Kind() == reflect.Interface {
		// A nil one panics in apimachinery; leave it to it.
		return nil, errUnsupported
	}
	switch t {
	case timeType: // value receivers: ToUnstructured
		return func(p unsafe.Pointer) (any, error) { return (*metav1.Time)(p).ToUnstructured(), nil }, nil
	case timePtrType:
		return func(p unsafe.Pointer) (any, error) {
			tp := *(**metav1.Time)(p)
			if tp == nil {
				return nil, nil
			}
			return tp.ToUnstructured(), nil
		}, nil
	case quantityType: // value receiver: works on a copy, as apimachinery's call does
		return func(p unsafe.Pointer) (any, error) { return (*resource.Quantity)(p).ToUnstructured(), nil }, nil
	}
	entry := value.TypeReflectEntryOf(t)
	generic := func(p unsafe.Pointer) (any, error) { return entry.ToUnstructured(reflect.NewAt(t, p).Elem()) }
	if t == intOrStringType {
		// Its value receiver's MarshalJSON, decoded: the number, or the
		// string as JSON gives it back (the same when it is valid UTF-8).
		return func(p unsafe.Pointer) (any, error) {
			is := (*intstr.IntOrString)(p)
			switch {
			case is.Type == intstr.Int:
				return int64(is.IntVal), nil
			case is.Type == intstr.String && utf8.ValidString(is.StrVal):
				return is.StrVal, nil
			}
			return generic(p)
		}, nil
	}
	if addr || t.Kind() == reflect.Pointer || !addrMatters(t) {
		return generic, nil
	}
	// Not addressable in apimachinery: a pointer receiver's method is not
	// found. A copy through an interface is not addressable either.
	return func(p unsafe.Pointer) (any, error) {
		return entry.ToUnstructured(reflect.ValueOf(reflect.NewAt(t, p).Elem().Interface()))
	}, nil
}

// addrMatters reports whether *t converts itself with a method t has not.
func addrMatters(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	for _, i := range []reflect.Type{marshalerType, converterType, converterErrType} {
		if pt.Implements(i) != t.Implements(i) {
			return true
		}
	}
	return false
}

// scalarEncoder converts a string, bool, integer or float by its kind, or
// is nil for the other kinds. An unsigned integer is a uint64 where
// asUint64 (a struct field in apimachinery v0.36), else an int64 or an
// error past math.MaxInt64.
func scalarEncoder(t reflect.Type, asUint64 bool) func(unsafe.Pointer) (any, error) {
	switch t.Kind() {
	case reflect.String:
		return func(p unsafe.Pointer) (any, error) { return *(*string)(p), nil }
	case reflect.Bool:
		return func(p unsafe.Pointer) (any, error) { return *(*bool)(p), nil }
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		get := numGetter[int64](t.Kind())
		return func(p unsafe.Pointer) (any, error) { return get(p), nil }
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		get := numGetter[uint64](t.Kind())
		if asUint64 {
			return func(p unsafe.Pointer) (any, error) { return get(p), nil }
		}
		return func(p unsafe.Pointer) (any, error) {
			u := get(p)
			if u > math.MaxInt64 {
				return nil, fmt.Errorf("unsigned value %d does not fit into int64 (overflow)", u)
			}
			return int64(u), nil
		}
	case reflect.Float32:
		return func(p unsafe.Pointer) (any, error) { return float64(*(*float32)(p)), nil }
	case reflect.Float64:
		return func(p unsafe.Pointer) (any, error) { return *(*float64)(p), nil }
	}
	return nil
}

// numGetter reads an integer of kind k as T: an int64 for the signed
// kinds, a uint64 for the unsigned ones.
func numGetter[T int64 | uint64](k reflect.Kind) func(unsafe.Pointer) T {
	switch k {
	case reflect.Int8:
		return func(p unsafe.Pointer) T { return T(*(*int8)(p)) }
	case reflect.Int16:
		return func(p unsafe.Pointer) T { return T(*(*int16)(p)) }
	case reflect.Int32:
		return func(p unsafe.Pointer) T { return T(*(*int32)(p)) }
	case reflect.Int64:
		return func(p unsafe.Pointer) T { return T(*(*int64)(p)) }
	case reflect.Int:
		return func(p unsafe.Pointer) T { return T(*(*int)(p)) }
	case reflect.Uint8:
		return func(p unsafe.Pointer) T { return T(*(*uint8)(p)) }
	case reflect.Uint16:
		return func(p unsafe.Pointer) T { return T(*(*uint16)(p)) }
	case reflect.Uint32:
		return func(p unsafe.Pointer) T { return T(*(*uint32)(p)) }
	case reflect.Uint64:
		return func(p unsafe.Pointer) T { return T(*(*uint64)(p)) }
	}
	return func(p unsafe.Pointer) T { return T(*(*uint)(p)) }
}

// sliceHeader is a slice's layout.
type sliceHeader struct {
	data unsafe.Pointer
	len  int
	cap  int
}

func (b *builder) sliceEncoder(t reflect.Type) (func(unsafe.Pointer) (any, error), error) {
	if t.Elem().Kind() == reflect.Uint8 {
		// json.Marshal of the bytes, decoded: base64.
		return func(p unsafe.Pointer) (any, error) {
			h := (*sliceHeader)(p)
			if h.data == nil {
				return nil, nil
			}
			return base64.StdEncoding.EncodeToString(unsafe.Slice((*byte)(h.data), h.len)), nil
		}, nil
	}
	if t.Elem() == stringType {
		return func(p unsafe.Pointer) (any, error) {
			s := *(*[]string)(p)
			if s == nil {
				return nil, nil
			}
			out := make([]any, len(s))
			for i, v := range s {
				out[i] = v
			}
			return out, nil
		}, nil
	}
	elem, err := b.value(t.Elem(), true)
	if err != nil {
		return nil, err
	}
	size := t.Elem().Size()
	return func(p unsafe.Pointer) (any, error) {
		h := (*sliceHeader)(p)
		if h.data == nil {
			return nil, nil
		}
		out := make([]any, h.len)
		for i := range out {
			v, err := elem.enc(unsafe.Add(h.data, uintptr(i)*size))
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}, nil
}

func (b *builder) mapEncoder(t reflect.Type) (func(unsafe.Pointer) (any, error), error) {
	if t.Key().Kind() != reflect.String {
		return nil, errUnsupported
	}
	if t.Key() == stringType && t.Elem() == stringType {
		return func(p unsafe.Pointer) (any, error) {
			m := *(*map[string]string)(p)
			if m == nil {
				return nil, nil
			}
			out := make(map[string]any, len(m))
			for k, v := range m {
				out[k] = v
			}
			return out, nil
		}, nil
	}
	// A map value is not addressable.
	elem, err := b.value(t.Elem(), false)
	if err != nil {
		return nil, err
	}
	return func(p unsafe.Pointer) (any, error) {
		mv := reflect.NewAt(t, p).Elem()
		if mv.IsNil() {
			return nil, nil
		}
		out := make(map[string]any, mv.Len())
		key := reflect.New(t.Key()).Elem()
		val := reflect.New(t.Elem()).Elem()
		vp := val.Addr().UnsafePointer()
		for it := mv.MapRange(); it.Next(); {
			key.SetIterKey(it)
			val.SetIterValue(it)
			v, err := elem.enc(vp)
			if err != nil {
				return nil, err
			}
			out[key.String()] = v
		}
		return out, nil
	}, nil
}

// interfaceEncoder converts an interface's content by its dynamic type
// (not addressable), or stops with errFallback where that has no plan.
func interfaceEncoder(t reflect.Type) func(unsafe.Pointer) (any, error) {
	return func(p unsafe.Pointer) (any, error) {
		v := reflect.NewAt(t, p).Elem()
		if v.IsNil() {
			return nil, nil
		}
		v = v.Elem()
		n := dynamicNode(v.Type())
		if n == nil {
			return nil, errFallback
		}
		c := reflect.New(v.Type())
		c.Elem().Set(v)
		return n.enc(c.UnsafePointer())
	}
}

// fieldTag is apimachinery's fieldInfoFromField: the JSON name (empty for
// an inlined field, the Go name where the tag has none), omitempty and
// omitzero.
func fieldTag(f reflect.StructField) (name string, omitEmpty, omitZero, embed bool) {
	tag := f.Tag.Get("json")
	if tag == "" {
		if !f.Anonymous {
			name = f.Name
		}
		return name, false, false, false
	}
	items := strings.Split(tag, ",")
	name = items[0]
	if name == "" && !f.Anonymous {
		name = f.Name
	}
	for _, o := range items[1:] {
		switch o {
		case "omitempty":
			omitEmpty = true
		case "omitzero":
			omitZero = true
		case "embed":
			// Inlines a named field in apimachinery v0.37 built with
			// Go 1.27: left to it.
			embed = true
		}
	}
	return name, omitEmpty, omitZero, embed
}

// structPlan is the plan of apimachinery's structToUnstructured for t.
func (b *builder) structPlan(t reflect.Type, addr bool) (*structPlan, error) {
	k := planKey{t, addr}
	if sp, ok := b.structs[k]; ok {
		return sp, nil
	}
	sp := &structPlan{}
	b.structs[k] = sp
	for i := range t.NumField() {
		f := t.Field(i)
		name, omitEmpty, omitZero, embed := fieldTag(f)
		if name == "-" {
			continue
		}
		if !f.IsExported() || embed {
			// apimachinery reads it, and panics on some kinds.
			return nil, errUnsupported
		}
		fp := fieldPlan{off: f.Offset, name: name, typ: f.Type}
		if omitEmpty {
			fp.omitEmpty = emptyFunc(f.Type)
		}
		if omitZero {
			fp.omitZero = value.OmitZeroFunc(f.Type)
		}
		if name == "" {
			// Inlined: into the same map.
			ft := f.Type
			if convertsItself(ft) {
				return nil, errUnsupported
			}
			switch {
			case ft.Kind() == reflect.Struct:
				in, err := b.structPlan(ft, addr)
				if err != nil {
					return nil, err
				}
				fp.inline = in
			case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct:
				in, err := b.structPlan(ft.Elem(), true)
				if err != nil {
					return nil, err
				}
				fp.inline, fp.inlinePtr = in, true
			default:
				return nil, errUnsupported
			}
			sp.fields = append(sp.fields, fp)
			continue
		}
		enc, err := b.fieldEncoder(f.Type, addr)
		if err != nil {
			return nil, err
		}
		fp.enc = enc
		sp.fields = append(sp.fields, fp)
	}
	return sp, nil
}

// fieldEncoder is what structToUnstructured does with a named field: a
// scalar kind taken as it is, whatever its type's methods (an unsigned one
// as uint64), anything else through toUnstructured.
func (b *builder) fieldEncoder(t reflect.Type, addr bool) (func(unsafe.Pointer) (any, error), error) {
	if enc := scalarEncoder(t, !rules.uintFieldInt64); enc != nil {
		return enc, nil
	}
	n, err := b.value(t, addr)
	if err != nil {
		return nil, err
	}
	if n.enc != nil {
		return n.enc, nil
	}
	// t contains itself: its encoder is being built.
	return func(p unsafe.Pointer) (any, error) { return n.enc(p) }, nil
}

// emptyFunc is apimachinery's isEmpty for a value of type t, or nil where
// it is never empty.
func emptyFunc(t reflect.Type) func(unsafe.Pointer) bool {
	switch t.Kind() {
	case reflect.String:
		return func(p unsafe.Pointer) bool { return len(*(*string)(p)) == 0 }
	case reflect.Bool:
		return func(p unsafe.Pointer) bool { return !*(*bool)(p) }
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		get := numGetter[int64](t.Kind())
		return func(p unsafe.Pointer) bool { return get(p) == 0 }
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		get := numGetter[uint64](t.Kind())
		return func(p unsafe.Pointer) bool { return get(p) == 0 }
	case reflect.Float32:
		return func(p unsafe.Pointer) bool { return *(*float32)(p) == 0 }
	case reflect.Float64:
		return func(p unsafe.Pointer) bool { return *(*float64)(p) == 0 }
	case reflect.Slice:
		return func(p unsafe.Pointer) bool { return (*sliceHeader)(p).len == 0 }
	case reflect.Map:
		return func(p unsafe.Pointer) bool { return reflect.NewAt(t, p).Elem().Len() == 0 }
	case reflect.Pointer, reflect.Interface:
		// A nil pointer; an interface without a type.
		return func(p unsafe.Pointer) bool { return *(*unsafe.Pointer)(p) == nil }
	}
	// Structs; arrays and the rest have no plan.
	return nil
}

// rules holds what apimachinery's converter does where its versions
// differ, learnt once by asking it (learnRules).
var rules struct {
	once sync.Once
	// ok is false where apimachinery converts the canary otherwise than
	// the plans: then it converts everything.
	ok bool
	// uintFieldInt64: a struct field's unsigned value is an int64, an
	// error past math.MaxInt64 (v0.37), not a uint64 (v0.36).
	uintFieldInt64 bool
}

// canary holds one of each rule of the plans that apimachinery could
// change.
type canary struct {
	Untagged   string
	Skipped    string      `json:"-"`
	SkipComma  string      `json:"-,"`
	NotInlined canaryInner `json:",inline"`
	metav1.TypeMeta
	*metav1.ListMeta
	U16      uint16             `json:"u16"`
	U16s     []uint16           `json:"u16s"`
	F32      float32            `json:"f32"`
	Bytes    []byte             `json:"bytes"`
	Empty    []string           `json:"empty,omitempty"`
	EmptyMap map[string]int     `json:"emptyMap,omitempty"`
	Struct   canaryInner        `json:"struct,omitempty"`
	Nil      *string            `json:"nil"`
	NilList  []int              `json:"nilList"`
	Time     metav1.Time        `json:"time,omitzero"`
	TimePtr  *metav1.Time       `json:"timePtr"`
	Quantity resource.Quantity  `json:"quantity"`
	IntOrStr intstr.IntOrString `json:"intOrStr"`
	Map      map[string]int8    `json:"map"`
	Dur      metav1.Duration    `json:"dur"`
}

type canaryInner struct {
	A string `json:"a"`
}

// learnRules learns rules, once, and reports whether the plans are
// used at all.
func learnRules() bool {
	rules.once.Do(func() {
		type uintProbe struct {
			U uint8 `json:"u"`
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&uintProbe{U: 1})
		if err != nil {
			return
		}
		switch m["u"].(type) {
		case uint64:
		case int64:
			rules.uintFieldInt64 = true
		default:
			return
		}
		now := metav1.Unix(1700000000, 0)
		c := &canary{Untagged: "u", Skipped: "s", SkipComma: "c", NotInlined: canaryInner{A: "n"}, TypeMeta: metav1.TypeMeta{Kind: "K"},
			U16: 7, U16s: []uint16{1}, F32: 1.5, Bytes: []byte("hi"), Empty: []string{}, EmptyMap: map[string]int{},
			Time: now, TimePtr: &now, Quantity: resource.MustParse("1.5Gi"), IntOrStr: intstr.FromString("80%"),
			Map: map[string]int8{"k": -1}, Dur: metav1.Duration{Duration: time.Second}}
		want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
		if err != nil {
			return
		}
		sp, err := newBuilder().structPlan(reflect.TypeFor[canary](), true)
		if err != nil {
			return
		}
		got := sp.newMap()
		if err := sp.fill(unsafe.Pointer(c), got); err != nil {
			return
		}
		rules.ok = reflect.DeepEqual(got, want)
	})
	return rules.ok
}

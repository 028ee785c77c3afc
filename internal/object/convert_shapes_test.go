package object

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand"
	"reflect"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"
)

// Shapes of users' own types (CRDs) that the schemes' types do not have.

type rPhase string
type rReplicas int32
type rLabels map[string]string
type rU uint64

// rMarshalBoth converts with its value-receiver MarshalJSON where it is not
// addressable (a map value, an interface), else with its pointer-receiver
// ToUnstructured.
type rMarshalBoth struct{ A int }

func (r rMarshalBoth) MarshalJSON() ([]byte, error) { return []byte(`{"v":1}`), nil }
func (r *rMarshalBoth) ToUnstructured() any         { return map[string]any{"p": int64(r.A)} }

// rBadJSON's MarshalJSON fails or gives invalid JSON for some values.
type rBadJSON struct{ A int }

func (r rBadJSON) MarshalJSON() ([]byte, error) {
	if r.A%5 == 1 {
		return []byte(`{"a":`), nil
	}
	if r.A%5 == 2 {
		return nil, errors.New("boom")
	}
	if r.A%5 == 3 {
		return []byte(`  "x"  `), nil
	}
	if r.A%5 == 4 {
		return []byte(`"s\\u00e9"`), nil
	}
	return []byte(`123.0`), nil
}

type rPtrConv struct{ A int }

func (r *rPtrConv) MarshalJSON() ([]byte, error) { return []byte(`"ptr"`), nil }

type rValMarshalNum int

func (r rValMarshalNum) MarshalJSON() ([]byte, error) { return json.Marshal(int(r) * 2) }

type RInner struct {
	X string `json:"x,omitempty"`
	Y *int   `json:"y"`
}

type RInner2 struct {
	Z []string `json:"z"`
}

type RNode struct {
	Name     string           `json:"name"`
	Children []RNode          `json:"children,omitempty"`
	Next     *RNode           `json:"next,omitempty"`
	ByName   map[string]RNode `json:"byName,omitempty"`
	PP       **RNode          `json:"pp,omitempty"`
}

type RDeep struct {
	RInner `json:",inline"`
	*RInner2
	Phase   rPhase                          `json:"phase"`
	PhaseP  *rPhase                         `json:"phaseP"`
	Phases  []rPhase                        `json:"phases"`
	Reps    rReplicas                       `json:"reps"`
	RepsL   []rReplicas                     `json:"repsL"`
	Labels  rLabels                         `json:"labels"`
	LabelsP *rLabels                        `json:"labelsP"`
	MSL     map[string][]RInner             `json:"msl"`
	MMS     map[string]map[string]RInner    `json:"mms"`
	MMP     map[string]map[string]*RInner   `json:"mmp"`
	SP      []*RInner                       `json:"sp"`
	PS      *[]RInner                       `json:"ps"`
	PPS     **[]RInner                      `json:"pps"`
	Raw     json.RawMessage                 `json:"raw"`
	RawL    []json.RawMessage               `json:"rawL"`
	RawM    map[string]json.RawMessage      `json:"rawM"`
	Ext     runtime.RawExtension            `json:"ext"`
	ExtP    *runtime.RawExtension           `json:"extP"`
	JS      apiextensionsv1.JSON            `json:"js"`
	JSP     *apiextensionsv1.JSON           `json:"jsp"`
	JSM     map[string]apiextensionsv1.JSON `json:"jsm"`
	Dur     metav1.Duration                 `json:"dur"`
	DurP    *metav1.Duration                `json:"durP"`
	TimesP  []*metav1.Time                  `json:"timesP"`
	TimeM   map[string]*metav1.Time         `json:"timeM"`
	QM      map[string]resource.Quantity    `json:"qm"`
	QPM     map[string]*resource.Quantity   `json:"qpm"`
	QL      []resource.Quantity             `json:"ql"`
	IOS     []intstr.IntOrString            `json:"iosL"`
	IOSP    []*intstr.IntOrString           `json:"iosPL"`
	Bytes   []byte                          `json:"bytes"`
	BytesL  [][]byte                        `json:"bytesL"`
	BytesM  map[string][]byte               `json:"bytesM"`
	Str     int64                           `json:"str,string"`
	Ünï     string                          `json:"ünï"`
	Ünï2    string
	U       rU                        `json:"u"`
	UL      []rU                      `json:"ul"`
	UP      *rU                       `json:"up"`
	F32     float32                   `json:"f32"`
	Both    rMarshalBoth              `json:"both"`
	BothL   []rMarshalBoth            `json:"bothL"`
	BothM   map[string]rMarshalBoth   `json:"bothM"`
	BothP   *rMarshalBoth             `json:"bothP"`
	Bad     rBadJSON                  `json:"bad"`
	BadL    []rBadJSON                `json:"badL"`
	PC      rPtrConv                  `json:"pc"`
	PCP     *rPtrConv                 `json:"pcp"`
	PCL     []rPtrConv                `json:"pcl"`
	VMN     rValMarshalNum            `json:"vmn"`
	VMNL    []rValMarshalNum          `json:"vmnl"`
	VMNM    map[string]rValMarshalNum `json:"vmnm"`
	Node    RNode                     `json:"node"`
	Any     any                       `json:"any"`
	AnyL    []any                     `json:"anyL"`
	AnyM    map[string]any            `json:"anyM"`
	AnyP    *any                      `json:"anyP"`
	Err     error                     `json:"err,omitempty"`
}

// rAny is an interface's content: typed values of the shapes above,
// nested maps and lists.
func rAny(c randfill.Continue, depth int) any {
	switch c.Intn(16) {
	case 0:
		return nil
	case 1:
		var in RInner
		c.Fill(&in)
		return in
	case 2:
		in := &RInner{}
		c.Fill(in)
		return in
	case 3:
		return rPhase("p")
	case 4:
		return rReplicas(3)
	case 5:
		return rLabels{"a": "b"}
	case 6:
		return rMarshalBoth{A: 2}
	case 7:
		return &rMarshalBoth{A: 2}
	case 8:
		return rValMarshalNum(4)
	case 9:
		return uint32(7)
	case 10:
		return json.RawMessage(`{"a":1}`)
	case 11:
		return resource.MustParse("1Gi")
	case 12:
		return intstr.FromString("x")
	case 13:
		var n RNode
		c.Fill(&n)
		return n
	case 14:
		if depth < 3 {
			return map[string]any{"k": rAny(c, depth+1)}
		}
		return nil
	}
	if depth < 3 {
		return []any{rAny(c, depth+1), rAny(c, depth+1)}
	}
	return float32(1.5)
}

// TestToUnstructuredUserShapes converts random objects of Go shapes users
// write in their own types, beyond the schemes' (named basic kinds, maps of
// lists and of maps, pointers to pointers and lists, json.RawMessage, a
// value-receiver MarshalJSON beside a pointer-receiver ToUnstructured, a
// MarshalJSON that fails or gives invalid JSON, ",string", unicode names,
// an error interface, interfaces holding typed values and recursive types),
// both ways, then from many goroutines at once on types seen first there
// (-race): the same map, the same error.
func TestToUnstructuredUserShapes(t *testing.T) {
	funcs := append(fillFuncs(),
		func(a *any, c randfill.Continue) { *a = rAny(c, 0) },
		func(r *json.RawMessage, c randfill.Continue) {
			if c.Bool() {
				*r = nil
			} else {
				*r = randRawJSON(c)
			}
		},
		func(u *rU, c randfill.Continue) {
			if rare(c) {
				*u = rU(math.MaxUint64)
			} else {
				*u = rU(c.Intn(100))
			}
		},
		func(*error, randfill.Continue) {},
		func(b *rBadJSON, c randfill.Continue) {
			switch {
			case rare(c):
				b.A = 1 + c.Intn(3) // an error
			case c.Bool():
				b.A = 4
			default:
				b.A = 0
			}
		},
		func(n *RNode, c randfill.Continue) {
			n.Name = c.String(3)
			if c.Intn(3) == 0 {
				n.Children = make([]RNode, c.Intn(2))
				for i := range n.Children {
					n.Children[i].Name = "c"
				}
			}
			if c.Intn(3) == 0 {
				n.ByName = map[string]RNode{"x": {Name: "y", Next: &RNode{Name: "z"}}}
			}
			if c.Intn(3) == 0 {
				p := &RNode{Name: "pp"}
				n.PP = &p
			}
		},
	)
	if topPlan(reflect.TypeFor[RDeep]()) == nil {
		t.Fatal("RDeep is left to apimachinery")
	}
	failed := 0
	for i := range 300 {
		var d RDeep
		randfill.New().RandSource(rand.NewSource(int64(i))).NilChance(0.25).NumElements(0, 3).MaxDepth(8).Funcs(funcs...).Fill(&d)
		if checkSame(t, &d) {
			failed++
		}
	}
	if failed > 30 {
		t.Errorf("%d of 300 conversions failed: the rest is not compared", failed)
	}

	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				r := &RRec{Kids: []RRec{{M: map[string]*RRec{"x": {A: RRec{}}}}}, A: map[string]any{"r": &RRec{A: uint8(g)}}}
				r.Inner.R = &RRec{Kids: []RRec{{}}}
				if i%2 == 0 {
					r.A = RRecHolder{Node: RNode{Name: "n", ByName: map[string]RNode{"a": {}}}}
				}
				want, wantErr := runtime.DefaultUnstructuredConverter.ToUnstructured(r)
				got, err := ToUnstructured(r)
				if (err == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
					t.Errorf("differs: %s", differs("", got, want))
				}
			}
		}()
	}
	wg.Wait()
}

// RRec contains itself through a list, a map, an interface and an
// anonymous struct; RRecHolder is only ever met in its interface.
type RRec struct {
	Kids  []RRec            `json:"kids"`
	M     map[string]*RRec  `json:"m"`
	A     any               `json:"a"`
	Inner struct{ R *RRec } `json:"inner"`
}

type RRecHolder struct {
	Node RNode `json:"node"`
}

package object

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// treeFrom builds a JSON tree (with a few other Go values among it) from
// the bytes of data: what the fuzzer varies.
type treeFrom struct{ data []byte }

func (t *treeFrom) byte() byte {
	if len(t.data) == 0 {
		return 0
	}
	b := t.data[0]
	t.data = t.data[1:]
	return b
}

func (t *treeFrom) uint64() uint64 {
	var buf [8]byte
	n := copy(buf[:], t.data)
	t.data = t.data[n:]
	return binary.LittleEndian.Uint64(buf[:])
}

// pieces of strings that json.Marshal escapes, or not.
var stringPieces = []string{
	"a", "Ready", "é", "日本", "<", ">", "&", `"`, `\`, "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f",
	"\u2028", "\u2029", "\xff", "\xc3", "\xe2\x80", "\xed\xa0\x80", "\U0001F600", " ", "/", "\u00e9\xfe",
}

func (t *treeFrom) string() string {
	var s []byte
	for n := t.byte() % 6; n > 0; n-- {
		if b := t.byte(); b < 64 {
			s = append(s, b+32, t.byte()) // raw bytes, any of them
		} else {
			s = append(s, stringPieces[int(b)%len(stringPieces)]...)
		}
	}
	return string(s)
}

func (t *treeFrom) float() float64 {
	switch t.byte() % 8 {
	case 0:
		return math.Float64frombits(t.uint64()) // NaN and the infinities too
	case 1:
		return []float64{0, math.Copysign(0, -1), 1e-6, 1e-7, 9.99999e-7, 1e20, 1e21, 1.5e300, 5e-324, 0.1, -2.5, 1e6}[t.byte()%12]
	case 2:
		return []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[t.byte()%3]
	default:
		return float64(int64(t.uint64())) / float64(1+t.byte())
	}
}

func (t *treeFrom) value(depth int) any {
	k := t.byte() % 16
	if depth > 5 && k >= 10 {
		k %= 10
	}
	switch k {
	case 0:
		return nil
	case 1, 2:
		return t.string()
	case 3:
		return t.byte()%2 == 0
	case 4:
		return int64(t.uint64())
	case 5:
		return t.float()
	case 6:
		return []any{json.Number("12"), json.Number("1.5e3"), json.Number("x"), json.Number(""), 7, int32(-3), float32(0.1), []string{"a"}, map[string]string{"<": ">"}}[t.byte()%9]
	case 7:
		return map[string]any(nil)
	case 8:
		return []any(nil)
	case 9:
		return []any{}
	case 10, 11, 12:
		m := map[string]any{}
		for n := t.byte() % 20; n > 0; n-- {
			m[t.string()] = t.value(depth + 1)
		}
		return m
	default:
		var l []any
		for n := t.byte() % 6; n > 0; n-- {
			l = append(l, t.value(depth+1))
		}
		return l
	}
}

// sameAsJSONMarshal fails t unless MarshalJSON(v) is json.Marshal(v):
// the same bytes, or the same error.
func sameAsJSONMarshal(t *testing.T, v any) {
	t.Helper()
	want, wantErr := json.Marshal(v)
	got, err := MarshalJSON(v)
	switch {
	case (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error():
		t.Fatalf("MarshalJSON(%#v) error = %v, json.Marshal's %v", v, err, wantErr)
	case !bytes.Equal(got, want):
		t.Fatalf("MarshalJSON(%#v) =\n%s\njson.Marshal:\n%s", v, got, want)
	}
}

// Property: on random trees, MarshalJSON writes json.Marshal's bytes, or
// returns its error.
func TestMarshalJSONIsJSONMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		data := make([]byte, r.IntN(512))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		sameAsJSONMarshal(t, (&treeFrom{data}).value(0))
	}
	deep := any("leaf")
	for range maxDepth + 5 {
		deep = []any{map[string]any{"k": deep}}
	}
	sameAsJSONMarshal(t, deep)
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	sameAsJSONMarshal(t, cyclic)
	sameAsJSONMarshal(t, map[string]any{"a": []any{1.0, math.NaN()}})
	sameAsJSONMarshal(t, map[string]any{"metadata": map[string]any{"uid": "u", "resourceVersion": "7"}, "status": map[string]any{"x": nil}})
}

func FuzzMarshalJSON(f *testing.F) {
	f.Add([]byte("\x0a\x05\x01\x03a<\x02\x05\x02"))
	f.Add([]byte("\x0d\x04\x05\x00\x00\x00\x00\x00\x00\xf8\x7f"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsJSONMarshal(t, (&treeFrom{data}).value(0))
	})
}

// BenchmarkMarshalJSON encodes a status patch body as the engine sends it.
//
//	go test -run '^$' -bench MarshalJSON -benchmem ./internal/object/
func BenchmarkMarshalJSON(b *testing.B) {
	body := map[string]any{
		"metadata": map[string]any{"uid": "5f1c7c6e-8d1b-4f5e-9d0e-2a6b1c3d4e5f", "resourceVersion": "123456"},
		"status": map[string]any{
			"observedGeneration": int64(1),
			"conditions": []any{
				map[string]any{"type": "ChildrenReady", "status": "True", "reason": "Reconciled", "message": "", "observedGeneration": int64(1), "lastTransitionTime": "2026-11-25T22:49:19Z"},
				map[string]any{"type": "Ready", "status": "True", "reason": "Succeeded", "message": "", "observedGeneration": int64(1), "lastTransitionTime": "2026-11-25T22:49:19Z"},
			},
		},
	}
	for _, c := range []struct {
		name    string
		marshal func(any) ([]byte, error)
	}{{"json.Marshal", json.Marshal}, {"MarshalJSON", MarshalJSON}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.marshal(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

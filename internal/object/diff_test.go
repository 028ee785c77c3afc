package object

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/steadyk8s/steady/internal/testapi"
)

// randomJSON is a random JSON value of the shapes ToMap gives, nested at
// most depth deep, over a few keys so that before and after share some.
func randomJSON(rng *rand.Rand, depth int) any {
	n := 9
	if depth == 0 {
		n = 5
	}
	switch rng.IntN(n) {
	case 7:
		return []any(nil) // JSON null, as code's var items []any is
	case 8:
		return map[string]any(nil)
	case 0:
		return nil
	case 1:
		return []string{"a", "b", "c"}[rng.IntN(3)]
	case 2:
		return int64(rng.IntN(3))
	case 3:
		return []float64{0, 1, 1.5}[rng.IntN(3)] // 0 and 1 equal int64 0 and 1
	case 4:
		return rng.IntN(2) == 0
	case 5:
		l := make([]any, rng.IntN(3))
		for i := range l {
			l[i] = randomJSON(rng, depth-1)
		}
		return l
	}
	return randomMap(rng, depth-1)
}

func randomMap(rng *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for _, k := range []string{"a", "b", "c", "d"} {
		if rng.IntN(3) > 0 {
			m[k] = randomJSON(rng, depth)
		}
	}
	return m
}

// mutate changes a copy of m at random: a value replaced, a key removed or
// added, a nested map mutated.
func mutate(rng *rand.Rand, m map[string]any, depth int) map[string]any {
	out := runtime.DeepCopyJSON(m)
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		switch rng.IntN(6) {
		case 0:
			delete(out, k)
		case 1:
			out[k] = randomJSON(rng, depth)
		case 2:
			if sub, ok := out[k].(map[string]any); ok && sub != nil && depth > 0 {
				out[k] = mutate(rng, sub, depth-1)
			}
		}
	}
	return out
}

func oracle(t *testing.T, before, after map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(before)
	if err != nil {
		t.Fatal(err)
	}
	a, err := json.Marshal(after)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.CreateMergePatch(b, a)
	if err != nil {
		t.Fatal(err)
	}
	var diff map[string]any
	if err := json.Unmarshal(p, &diff); err != nil {
		t.Fatal(err)
	}
	return diff
}

// TestMergeDiffIsCreateMergePatch checks MergeDiff against
// jsonpatch.CreateMergePatch on JSON-encoded copies, over random pairs.
func TestMergeDiffIsCreateMergePatch(t *testing.T) {
	for seed := range uint64(3000) {
		rng := rand.New(rand.NewPCG(seed, 7))
		before := randomMap(rng, 3)
		after := mutate(rng, before, 3)
		beforeCopy, afterCopy := runtime.DeepCopyJSON(before), runtime.DeepCopyJSON(after)
		got := MergeDiff(before, after)
		want := oracle(t, before, after)
		// No difference is nil; a difference, the patch.
		if (len(want) == 0) != (got == nil) || got != nil && !SameJSON(got, want) {
			t.Fatalf("seed %d: before %v, after %v:\nMergeDiff        %v\nCreateMergePatch %v", seed, before, after, got, want)
		}
		// The patch holds copies: changing it changes neither input.
		if got != nil {
			testapi.Scribble(got)
		}
		if !EqualJSON(before, beforeCopy) || !EqualJSON(after, afterCopy) {
			t.Fatalf("seed %d: changing the patch changed an input", seed)
		}
	}
}

func TestMergeDiff(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after string
		want          string
	}{
		{"no change", `{"a":{"b":[1,2]},"c":"x"}`, `{"a":{"b":[1,2]},"c":"x"}`, `{}`},
		{"added, changed and removed", `{"a":1,"b":{"c":"x","d":"y"}}`, `{"b":{"c":"z"},"e":true}`, `{"a":null,"b":{"c":"z","d":null},"e":true}`},
		{"list replaced whole", `{"l":[1,2,3]}`, `{"l":[1,3]}`, `{"l":[1,3]}`},
		{"map to value", `{"m":{"a":1}}`, `{"m":"x"}`, `{"m":"x"}`},
		{"null to map", `{"m":null}`, `{"m":{"a":1}}`, `{"m":{"a":1}}`},
		{"emptied map", `{"m":{"a":1}}`, `{"m":{}}`, `{"m":{"a":null}}`},
		// Past 2^53 a float64 loses the last digit: the patch does not.
		{"big integers", `{"n":9007199254740993}`, `{"n":9007199254740992}`, `{"n":9007199254740992}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := MergeDiff(decodeInts(t, tc.before), decodeInts(t, tc.after))
			if want := decodeInts(t, tc.want); !EqualJSON(got, want) {
				t.Errorf("MergeDiff = %v, want %v", got, want)
			}
		})
	}
}

// decodeInts decodes s as the API machinery does: integers as int64.
func decodeInts(t *testing.T, s string) map[string]any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	c, err := ToJSONTypes(m)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func BenchmarkMergeDiff(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	before := randomMap(rng, 4)
	after := mutate(rng, before, 4)
	b.Run("MergeDiff", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			MergeDiff(before, after)
		}
	})
	b.Run("CreateMergePatch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bj, _ := json.Marshal(before)
			aj, _ := json.Marshal(after)
			p, _ := jsonpatch.CreateMergePatch(bj, aj)
			var m map[string]any
			_ = json.Unmarshal(p, &m)
		}
	})
}

func TestEqualJSONNumbers(t *testing.T) {
	for _, tc := range []struct {
		a, b any
		want bool
	}{
		{int64(3), float64(3), true},
		{float64(3), int64(3), true},
		{int64(3), float64(3.5), false},
		{int64(1<<53 + 1), float64(1 << 53), false}, // float64(2^53+1) rounds to 2^53
		{float64(1 << 53), int64(1<<53 + 1), false},
		{int64(1 << 53), float64(1 << 53), true},
		{int64(math.MaxInt64), float64(math.MaxInt64), false}, // the float64 is 2^63
		{int64(math.MinInt64), float64(math.MinInt64), true},
		// a typed object's unsigned field, as the converter gives it
		{uint64(3), int64(3), true},
		{int64(3), uint64(3), true},
		{uint64(3), float64(3), true},
		{float64(3), uint64(3), true},
		{uint64(3), uint64(3), true},
		{uint64(3), int64(4), false},
		{int64(-1), uint64(math.MaxUint64), false},
		{uint64(math.MaxUint64), int64(-1), false},
		{uint64(math.MaxUint64), float64(math.MaxUint64), false}, // the float64 is 2^64
		{uint64(1 << 63), float64(1 << 63), true},
		{math.Copysign(0, -1), uint64(0), true}, // a negative zero
		{float64(3.5), uint64(3), false},
		{uint64(1 << 63), float64(-(1 << 63)), false},
		{uint64(1<<63 + 1), int64(math.MinInt64 + 1), false},
		{uint64(1<<63 + 1), uint64(1<<63 + 1), true},
		{float64(1 << 63), uint64(1 << 63), true},
	} {
		if got := EqualJSON(tc.a, tc.b); got != tc.want {
			t.Errorf("EqualJSON(%v (%T), %v (%T)) = %v, want %v", tc.a, tc.a, tc.b, tc.b, got, tc.want)
		}
	}
}

// TestMergeDiffTypedNil: a nil []any or map[string]any inside an
// unstructured object (var items []any, filled by no append) is JSON null,
// as json.Marshal and jsonpatch.CreateMergePatch (the diff before MergeDiff)
// have it: a removal, not an empty list, nor the removal of each key.
func TestMergeDiffTypedNil(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after map[string]any
	}{
		{"list set to a nil slice", map[string]any{"l": []any{"a"}}, map[string]any{"l": []any(nil)}},
		{"map set to a nil map", map[string]any{"m": map[string]any{"a": "x"}}, map[string]any{"m": map[string]any(nil)}},
		{"nil slice to an empty list", map[string]any{"l": []any(nil)}, map[string]any{"l": []any{}}},
		{"empty list to a nil slice", map[string]any{"l": []any{}}, map[string]any{"l": []any(nil)}},
		{"nil map to an empty map", map[string]any{"m": map[string]any(nil)}, map[string]any{"m": map[string]any{}}},
		{"empty map to a nil map", map[string]any{"m": map[string]any{}}, map[string]any{"m": map[string]any(nil)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := json.Marshal(MergeDiff(tc.before, tc.after))
			want, _ := json.Marshal(oracle(t, tc.before, tc.after))
			if string(got) != string(want) {
				t.Errorf("MergeDiff = %s, CreateMergePatch = %s", got, want)
			}
		})
	}
}

// TestMergeDiffInvalidUTF8: the JSON encoder writes each byte of a string
// that is not UTF-8 as U+FFFD, so a string holding such bytes and one
// holding U+FFFD in their place are the same JSON: no difference to send
// (a patch that changes nothing, on every reconcile), as
// jsonpatch.CreateMergePatch of the encoded objects had it.
func TestMergeDiffInvalidUTF8(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after string
	}{
		{"replaced as written", "a\ufffd\ufffdb", "a\xff\xfeb"},
		{"raw bytes, other raw bytes", "a\xffb", "a\xfeb"},
		{"one replacement per byte", "a\ufffdb", "a\xff\xfeb"},
		{"valid strings", "a", "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, after := map[string]any{"s": tc.before}, map[string]any{"s": tc.after}
			// As sent: encoded, and decoded again to compare.
			var got map[string]any
			if err := json.Unmarshal(must(json.Marshal(MergeDiff(before, after))), &got); err != nil {
				t.Fatal(err)
			}
			want := oracle(t, before, after)
			if len(want) == 0 {
				want = nil // no difference: MergeDiff's nil, encoded as null
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("MergeDiff = %s, CreateMergePatch = %s", got, want)
			}
		})
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestSameJSON: SameJSON is EqualJSON as the encoder writes the values: a
// Go nil map or list is null, not an empty one; bytes that are not UTF-8
// are U+FFFD each.
func TestSameJSON(t *testing.T) {
	for _, tc := range []struct {
		a, b        any
		same, equal bool
	}{
		{[]any(nil), []any{}, false, true},
		{map[string]any(nil), map[string]any{}, false, true},
		{[]any(nil), nil, true, false},
		{map[string]any(nil), []any(nil), true, false},
		{[]any{map[string]any(nil)}, []any{nil}, true, false},
		{"a\xff", "a\ufffd", true, false},
		{"a\xff", "a\xfe", true, false},
		{"a\xff\xfe", "a\ufffd", false, false},
		{int64(2), float64(2), true, true},
	} {
		if got := SameJSON(tc.a, tc.b); got != tc.same {
			t.Errorf("SameJSON(%#v, %#v) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
		if got := SameJSON(tc.b, tc.a); got != tc.same {
			t.Errorf("SameJSON(%#v, %#v) = %v, want %v", tc.b, tc.a, got, tc.same)
		}
		if got := EqualJSON(tc.a, tc.b); got != tc.equal {
			t.Errorf("EqualJSON(%#v, %#v) = %v, want %v (unchanged)", tc.a, tc.b, got, tc.equal)
		}
	}
}

// MergeDiff makes a map only where there is a difference: two equal
// objects cost nothing, whatever their depth.
func TestMergeDiffMakesMapsOnlyForDifferences(t *testing.T) {
	obj := func() map[string]any {
		return map[string]any{
			"metadata": map[string]any{"name": "w", "labels": map[string]any{"a": "1"}},
			"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"size": int64(1)}}},
		}
	}
	a, b := obj(), obj()
	if n := testing.AllocsPerRun(100, func() { _ = MergeDiff(a, b) }); n > 0 {
		t.Errorf("MergeDiff of equal objects: %v allocations, want none", n)
	}
	if d := MergeDiff(a, b); d != nil {
		t.Errorf("MergeDiff of equal objects = %v, want nil", d)
	}
}

// TestAsJSON: AsJSON returns a map of JSON values itself, converts the
// uint64 of a typed object's unsigned field (which runtime.DeepCopyJSON
// then takes), and refuses what the JSON encoder refuses, naming the field.
func TestAsJSON(t *testing.T) {
	m := map[string]any{"a": map[string]any{"n": int64(1), "l": []any{"x", 1.5, nil}}}
	if got, err := AsJSON(m); err != nil || reflect.ValueOf(got).Pointer() != reflect.ValueOf(m).Pointer() {
		t.Fatalf("AsJSON of JSON values: %v, %v; want the map itself", got, err)
	}
	u := map[string]any{"status": map[string]any{"count": uint64(3), "ports": []any{uint64(80)}}}
	got, err := AsJSON(u)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"status": map[string]any{"count": int64(3), "ports": []any{int64(80)}}}
	if !reflect.DeepEqual(runtime.DeepCopyJSON(got), want) {
		t.Fatalf("AsJSON = %v, want %v", got, want)
	}
	if u["status"].(map[string]any)["count"] != uint64(3) {
		t.Fatal("AsJSON changed its input")
	}
	var pe *PathError
	if _, err := AsJSON(map[string]any{"spec": map[string]any{"ratio": math.NaN()}}); !errors.As(err, &pe) || pe.Path != "spec.ratio" {
		t.Fatalf("AsJSON of a NaN: %v, want a PathError at spec.ratio", err)
	}
}

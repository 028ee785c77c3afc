package object

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// PathError says that the value at a field path of an unstructured object
// is not JSON.
type PathError struct {
	// Path is the field, as "spec.ports[0].port".
	Path string
	// Err is what is wrong with it.
	Err error
}

// Error implements error.
func (e *PathError) Error() string { return fmt.Sprintf("field %s: %v", e.Path, e.Err) }

// Unwrap returns the underlying error.
func (e *PathError) Unwrap() error { return e.Err }

// NormalizeJSON makes the content of an unstructured obj JSON-typed, as
// the API server's answers are (int64, float64, string, bool, nil,
// map[string]any, []any), when code wrote other Go values into it (an int,
// a []string, a map[string]string): what the JSON encoder accepts, but
// runtime.DeepCopyJSON, and so the object's DeepCopy, panics on. Other
// objects are left alone. A value that is not JSON is a [*PathError].
func NormalizeJSON(obj runtime.Object) error {
	u, ok := obj.(runtime.Unstructured)
	if !ok || isJSON(u.UnstructuredContent()) {
		return nil
	}
	m, err := ToJSONTypes(u.UnstructuredContent())
	if err != nil {
		return err
	}
	u.SetUnstructuredContent(m)
	return nil
}

// ToJSONTypes copies m into JSON types: Go integers become int64, float32
// float64, typed slices and string-keyed maps ([]string,
// map[string]string) []any and map[string]any. A value that is none of
// these (a struct, a pointer, a NaN, a uint64 past int64) is a [*PathError]
// naming its field.
func ToJSONTypes(m map[string]any) (map[string]any, error) {
	v, err := jsonValue(m, "")
	if err != nil {
		return nil, err
	}
	out, _ := v.(map[string]any)
	if out == nil {
		out = map[string]any{} // an object's content: never null
	}
	return out, nil
}

func jsonValue(v any, path string) (any, error) {
	sub := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	notJSON := func(err error) error {
		if err == nil {
			err = fmt.Errorf("%v (%T) is not a JSON value", v, v)
		}
		return &PathError{Path: path, Err: err}
	}
	switch x := v.(type) {
	case nil, string, bool, int64:
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, notJSON(nil)
		}
		return x, nil
	case map[string]any:
		if x == nil {
			return nil, nil // JSON null, not an empty object
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := jsonValue(e, sub(k))
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		if x == nil {
			return nil, nil // JSON null, not an empty list
		}
		out := make([]any, len(x))
		for i, e := range x {
			c, err := jsonValue(e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case int:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case uint8:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint:
		if uint64(x) <= math.MaxInt64 {
			return int64(x), nil
		}
		return nil, notJSON(nil)
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), nil
		}
		return nil, notJSON(nil)
	case float32:
		return jsonValue(float64(x), path)
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i, nil
		}
		if f, err := x.Float64(); err == nil {
			return jsonValue(f, path)
		}
		return nil, notJSON(nil)
	}
	// A typed slice or string-keyed map ([]string, map[string]string,
	// []int32): element by element. Structs, pointers and the rest are no
	// JSON value of an unstructured object.
	rv := reflect.ValueOf(v)
	if (rv.Kind() == reflect.Slice || rv.Kind() == reflect.Map) && rv.IsNil() {
		return nil, nil // a nil []string or map[string]string encodes as null
	}
	switch {
	case rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() != reflect.Uint8, rv.Kind() == reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			c, err := jsonValue(rv.Index(i).Interface(), fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case rv.Kind() == reflect.Map && rv.Type().Key().Kind() == reflect.String:
		out := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			k := it.Key().String()
			c, err := jsonValue(it.Value().Interface(), sub(k))
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	}
	return nil, notJSON(nil)
}

func isJSON(v any) bool { return jsonTyped(v, false) }

// jsonTyped reports whether v holds JSON types only; with finite, no NaN
// or infinity either (which the JSON encoder refuses).
func jsonTyped(v any, finite bool) bool {
	switch v := v.(type) {
	case nil, string, int64, bool:
		return true
	case float64:
		return !finite || !math.IsNaN(v) && !math.IsInf(v, 0)
	case map[string]any:
		for _, e := range v {
			if !jsonTyped(e, finite) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range v {
			if !jsonTyped(e, finite) {
				return false
			}
		}
		return true
	}
	return false
}

// AsJSON returns m in JSON types, as the encoder writes them: m itself,
// without a copy, where it holds only JSON values; else its copy by
// [ToJSONTypes] (the uint64 the converter of k8s.io/apimachinery v0.36
// gives for an unsigned struct field becomes an int64), which
// runtime.DeepCopyJSON takes. A value the JSON encoder refuses (a NaN, an
// infinity, a Go value that is no JSON value) is a [*PathError] naming its
// field.
func AsJSON(m map[string]any) (map[string]any, error) {
	if jsonTyped(m, true) {
		return m, nil
	}
	return ToJSONTypes(m)
}

// Equal reports whether a and b hold the same Go values, field for field
// (reflect.DeepEqual; unstructured objects compared with [EqualJSON]): the
// cheap check before any conversion to JSON. Equal values are equal JSON;
// unequal ones may still be (a nil and an empty list), which only a
// comparison of the JSON tells.
func Equal(a, b runtime.Object) bool {
	au, aok := a.(*unstructured.Unstructured)
	bu, bok := b.(*unstructured.Unstructured)
	if aok && bok {
		if au == nil || bu == nil {
			return au == bu
		}
		return EqualJSON(au.Object, bu.Object)
	}
	return reflect.DeepEqual(a, b)
}

// EqualJSON is reflect.DeepEqual for JSON values (maps, lists, strings,
// numbers, bools, nil; an int64, a float64 and a uint64 of the same value
// are the same JSON number), without its bookkeeping: an unstructured object
// compares in a fraction of the time. Values of other Go types are left to
// reflect.DeepEqual. A Go nil map or list ([]any(nil): JSON null) and an
// empty one are alike to it; [SameJSON] tells them apart.
func EqualJSON(a, b any) bool { return equalJSON(a, b, false) }

// SameJSON is [EqualJSON] exactly as the JSON encoder has the values: a Go
// nil map[string]any or []any (code's var items []any, filled by no
// append) is null, as an absent value is, not an empty map or list; a
// string's bytes that are not UTF-8 are each U+FFFD. It is what decides
// whether a merge patch must set a field.
func SameJSON(a, b any) bool { return equalJSON(a, b, true) }

func equalJSON(a, b any, nulls bool) bool {
	if nulls {
		if an, bn := IsNull(a), IsNull(b); an || bn {
			return an && bn
		}
	}
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, av := range a {
			bv, ok := b[k]
			if !ok || !equalJSON(av, bv, nulls) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !equalJSON(a[i], b[i], nulls) {
				return false
			}
		}
		return true
	case string:
		b, ok := b.(string)
		return ok && (a == b || nulls && sameEncoded(a, b))
	case int64:
		switch b := b.(type) {
		case int64:
			return a == b
		case float64: // the same JSON number, decoded another way
			return SameNumber(a, b)
		case uint64:
			return equalJSON(b, a, nulls)
		}
		return false
	case float64:
		switch b := b.(type) {
		case float64:
			return a == b
		case int64:
			return SameNumber(b, a)
		case uint64:
			return equalJSON(b, a, nulls)
		}
		return false
	case uint64:
		// A typed object's unsigned field, as the converter of
		// k8s.io/apimachinery v0.36 gives it: the JSON number an int64 or
		// a float64 of its value is.
		if a <= math.MaxInt64 {
			return equalJSON(int64(a), b, nulls)
		}
		switch b := b.(type) {
		case uint64:
			return a == b
		case float64: // 0 <= b < 2^64: uint64(b) is defined
			return b >= 0 && b < math.MaxUint64 && b == math.Trunc(b) && uint64(b) == a
		}
		return false
	case bool:
		b, ok := b.(bool)
		return ok && a == b
	case nil:
		return b == nil
	}
	return reflect.DeepEqual(a, b)
}

// sameEncoded reports whether two unequal strings encode alike: the JSON
// encoder writes each byte that is not UTF-8 as U+FFFD.
func sameEncoded(a, b string) bool {
	if utf8.ValidString(a) && utf8.ValidString(b) {
		return false
	}
	ar, br := []rune(a), []rune(b) // a byte that is not UTF-8 is one U+FFFD
	return slices.Equal(ar, br)
}

// IsNull reports whether v encodes as JSON null: nil, or a Go nil
// map[string]any or []any (code's var items []any, filled by no append).
func IsNull(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		return v == nil
	case []any:
		return v == nil
	}
	return false
}

// SameNumber reports whether i and f are one number, exactly: past 2^53 a
// float64 holds only some integers, and float64(i) rounds (2^53+1 is not
// the float64 2^53).
func SameNumber(i int64, f float64) bool {
	// -2^63 <= f < 2^63: int64(f) is defined.
	return f >= math.MinInt64 && f < math.MaxInt64 && f == math.Trunc(f) && int64(f) == i
}

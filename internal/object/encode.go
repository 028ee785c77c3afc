package object

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// MarshalJSON is encoding/json.Marshal for a JSON tree (map[string]any,
// []any, string, bool, int64, float64, nil, as [ToMap] makes them): the
// same bytes (keys sorted, strings escaped as json.Marshal escapes them,
// HTML characters, U+2028 and U+2029 included, each invalid UTF-8 byte
// written as U+FFFD; numbers formatted alike), and the same errors, for a
// fraction of its allocations: a patch body is encoded on every write. A
// value of another Go type is encoded by json.Marshal; a tree that
// json.Marshal refuses (a NaN, a cycle) is left to it whole, for its error.
func MarshalJSON(v any) ([]byte, error) {
	out, err := Encode(func(b []byte) ([]byte, error) {
		if b, ok := appendJSON(b, v, 0); ok {
			return b, nil
		}
		return b, errForMarshal
	})
	if err == errForMarshal {
		return json.Marshal(v)
	}
	return out, err
}

// errForMarshal stops an encoding of a tree that is json.Marshal's to
// refuse (or to encode: a value of another Go type).
var errForMarshal = errors.New("left to json.Marshal")

// Encode returns what fill appends to an empty buffer, in a slice of its
// own sized to it: the buffer comes from a pool, and goes back to it
// (unless grown past maxPooledBuffer) whatever fill returns; on fill's
// error, nil and that error.
func Encode(fill func(b []byte) ([]byte, error)) ([]byte, error) {
	bp := encodeBuffers.Get().(*[]byte)
	b, err := fill((*bp)[:0])
	var out []byte
	if err == nil {
		out = slices.Clone(b)
	}
	if cap(b) <= maxPooledBuffer {
		*bp = b
		encodeBuffers.Put(bp)
	}
	return out, err
}

// AppendJSON appends [MarshalJSON]'s encoding of v to b (b as it was, and
// json.Marshal's error, where that refuses v).
func AppendJSON(b []byte, v any) ([]byte, error) {
	if out, ok := appendJSON(b, v, 0); ok {
		return out, nil
	}
	js, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, js...), nil
}

// maxPooledBuffer bounds the buffers kept for the next encoding: a rare
// large object does not pin its buffer.
const maxPooledBuffer = 64 << 10

var encodeBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxDepth is the nesting past which MarshalJSON leaves the tree to
// json.Marshal, which tells a cycle from a deep tree.
const maxDepth = 1000

// appendJSON appends the JSON of v to b; ok is false where v (or what it
// holds) is for json.Marshal to refuse.
func appendJSON(b []byte, v any, depth int) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		return appendString(b, v), true
	case bool:
		return strconv.AppendBool(b, v), true
	case int64:
		return strconv.AppendInt(b, v, 10), true
	case float64:
		return appendFloat(b, v)
	case map[string]any:
		if v == nil {
			return append(b, "null"...), true
		}
		if depth >= maxDepth {
			return b, false
		}
		var arr [16]string
		keys := arr[:0]
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			var ok bool
			if b, ok = appendJSON(b, v[k], depth+1); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	case []any:
		if v == nil {
			return append(b, "null"...), true
		}
		if depth >= maxDepth {
			return b, false
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendJSON(b, e, depth+1); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	}
	// Another Go type (an int, a json.Number, a struct): json.Marshal's
	// bytes for it are what it writes for it inside the tree.
	data, err := json.Marshal(v)
	if err != nil {
		return b, false
	}
	return append(b, data...), true
}

// appendFloat is encoding/json's float64 format: like %g, with the
// exponent used below 1e-6 and from 1e21 on, and not padded (e-7, not
// e-07). NaN and the infinities are no JSON.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

const hexDigits = "0123456789abcdef"

// appendString is encoding/json's string encoding with HTML escaping (its
// default): quotes, backslashes and control characters escaped, <, > and
// & as \u003c, \u003e and \u0026, U+2028 and U+2029 escaped, and each byte
// of invalid UTF-8 replaced by \ufffd.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

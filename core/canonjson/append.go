package canonjson

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Appender is implemented by types that write their own BPC-CJSON-1
// encoding. Append and Marshal trust it: AppendCanonical must append exactly
// one canonical value (the bytes Canonicalize would produce) or return an
// error. Implementations should also implement json.Marshaler with the same
// bytes, so that they encode the same way inside values Append hands to
// encoding/json (structs, typed maps).
type Appender interface {
	AppendCanonical(dst []byte) ([]byte, error)
}

// Append appends the canonical encoding of v to dst. The dynamic shapes that
// derivation traces, payloads and audit data are built from are written
// directly, without a round trip through encoding/json:
//
//	nil, bool, string, int, int32, int64, uint32, uint64, json.Number,
//	json.RawMessage (canonicalized), Appender, map[string]any, []any,
//	[]string, []map[string]any
//
// Anything else (structs, typed maps and slices, floats) takes the general
// path: encoding/json, then Canonicalize. Both paths give the same bytes,
// except that the direct path rejects a string that is not valid UTF-8
// (ErrInvalidUTF8) where encoding/json would silently substitute U+FFFD.
func Append(dst []byte, v any) ([]byte, error) {
	return appendValue(dst, v, 0)
}

// AppendString appends s as a canonical JSON string; s must be valid UTF-8.
func AppendString(dst []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return dst, fmt.Errorf("canonjson: %w in string %q", ErrInvalidUTF8, s)
	}
	return appendStr(dst, s), nil
}

// appendStr appends s, known to be valid UTF-8, as a minimally escaped JSON
// string: only '"', '\\' and U+0000–U+001F are escaped.
func appendStr[S string | []byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		dst = appendEscape(dst, c)
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// shortEscapes holds, for a byte with a two-character JSON escape, the
// letter after the backslash; every other byte appendEscape is given takes
// \u00XX.
var shortEscapes = [256]byte{'"': '"', '\\': '\\', '\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't'}

func appendEscape(dst []byte, c byte) []byte {
	if e := shortEscapes[c]; e != 0 {
		return append(dst, '\\', e)
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
}

func appendValue(dst []byte, v any, depth int) ([]byte, error) {
	if depth > MaxDepth {
		return dst, fmt.Errorf("canonjson: %w (more than %d levels)", ErrTooDeep, MaxDepth)
	}
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case string:
		return AppendString(dst, x)
	case int:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case uint32:
		return strconv.AppendUint(dst, uint64(x), 10), nil
	case uint64:
		return strconv.AppendUint(dst, x, 10), nil
	case json.Number:
		return canonicalizeAppend(dst, []byte(x))
	case json.RawMessage:
		if x == nil {
			return append(dst, "null"...), nil // as encoding/json writes a nil RawMessage
		}
		return canonicalizeAppend(dst, x)
	case Appender:
		return x.AppendCanonical(dst)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys) // Go compares strings by their bytes: UTF-8 byte order
		dst = append(dst, '{')
		var err error
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = AppendString(dst, k); err != nil {
				return dst, err
			}
			dst = append(dst, ':')
			if dst, err = appendValue(dst, x[k], depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case []any:
		if x == nil {
			return append(dst, "null"...), nil
		}
		return appendSlice(dst, x, depth, func(dst []byte, e any) ([]byte, error) { return appendValue(dst, e, depth+1) })
	case []string:
		if x == nil {
			return append(dst, "null"...), nil
		}
		return appendSlice(dst, x, depth, AppendString)
	case []map[string]any:
		if x == nil {
			return append(dst, "null"...), nil
		}
		return appendSlice(dst, x, depth, func(dst []byte, e map[string]any) ([]byte, error) {
			if e == nil {
				return append(dst, "null"...), nil
			}
			return appendValue(dst, e, depth+1)
		})
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return dst, fmt.Errorf("canonjson: marshal %T: %w", v, err)
	}
	out, err := canonicalizeAppend(dst, raw)
	if err != nil {
		return dst, fmt.Errorf("canonjson: marshal %T: %w", v, err)
	}
	return out, nil
}

func appendSlice[E any](dst []byte, xs []E, depth int, f func([]byte, E) ([]byte, error)) ([]byte, error) {
	if depth+1 > MaxDepth {
		return dst, fmt.Errorf("canonjson: %w (more than %d levels)", ErrTooDeep, MaxDepth)
	}
	dst = append(dst, '[')
	var err error
	for i, e := range xs {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = f(dst, e); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

package api

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Huma decodes every request body twice: into an any, whose maps and
// slices it validates against the operation's schema, then into the
// operation's input type. The first took a sixth of a batch enqueue's CPU
// in json.Unmarshal, which scans the whole body once to check it and once
// more to build the document. unmarshalJSON builds that document in one
// pass instead. It is the very value json.Unmarshal builds
// (map[string]any, []any, float64, string, bool, nil); for anything it does
// not handle on its own (a string with escapes or invalid UTF-8, a number
// float64 cannot hold, deep nesting, invalid JSON) it leaves the whole
// body to json.Unmarshal, so that the value, or the error, stays its own.

// unmarshalJSON is json.Unmarshal, with decodeAny for an empty *any.
func unmarshalJSON(data []byte, v any) error {
	if p, ok := v.(*any); ok && *p == nil {
		if doc, ok := decodeAny(data); ok {
			*p = doc
			return nil
		}
	}
	return json.Unmarshal(data, v)
}

// maxAnyDepth is how deep decodeAny nests before it leaves a document to
// json.Unmarshal (which refuses one deeper than 10000).
const maxAnyDepth = 1000

// decodeAny returns the JSON document data as json.Unmarshal decodes it
// into an any; false when it leaves data to json.Unmarshal.
func decodeAny(data []byte) (any, bool) {
	d := anyDecoder{data: data}
	v, ok := d.value(0)
	if !ok {
		return nil, false
	}
	d.space()
	return v, d.i == len(d.data)
}

// anyDecoder reads one JSON document from data, at i.
type anyDecoder struct {
	data []byte
	i    int
}

func (d *anyDecoder) space() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next is the byte at i after whitespace, 0 at the end.
func (d *anyDecoder) next() byte {
	d.space()
	if d.i == len(d.data) {
		return 0
	}
	return d.data[d.i]
}

func (d *anyDecoder) value(depth int) (any, bool) {
	switch d.next() {
	case '{':
		return d.object(depth + 1)
	case '[':
		return d.array(depth + 1)
	case '"':
		return d.string()
	case 't':
		return true, d.literal("true")
	case 'f':
		return false, d.literal("false")
	case 'n':
		return nil, d.literal("null")
	}
	return d.number()
}

func (d *anyDecoder) object(depth int) (any, bool) {
	if depth > maxAnyDepth {
		return nil, false
	}
	d.i++ // {
	m := map[string]any{}
	if d.next() == '}' {
		d.i++
		return m, true
	}
	for {
		if d.next() != '"' {
			return nil, false
		}
		k, ok := d.string()
		if !ok || d.next() != ':' {
			return nil, false
		}
		d.i++
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		m[k] = v // a repeated member: the last wins, as in json.Unmarshal
		switch d.next() {
		case ',':
			d.i++
		case '}':
			d.i++
			return m, true
		default:
			return nil, false
		}
	}
}

func (d *anyDecoder) array(depth int) (any, bool) {
	if depth > maxAnyDepth {
		return nil, false
	}
	d.i++ // [
	a := make([]any, 0)
	if d.next() == ']' {
		d.i++
		return a, true
	}
	for {
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		switch d.next() {
		case ',':
			d.i++
		case ']':
			d.i++
			return a, true
		default:
			return nil, false
		}
	}
}

// string reads a string without escapes in valid UTF-8, which is its
// bytes; false for any other.
func (d *anyDecoder) string() (string, bool) {
	start := d.i + 1
	for j := start; j < len(d.data); j++ {
		switch c := d.data[j]; {
		case c == '"':
			s := d.data[start:j]
			if !utf8.Valid(s) {
				return "", false // json.Unmarshal replaces what is not UTF-8
			}
			d.i = j + 1
			return string(s), true
		case c == '\\' || c < 0x20:
			return "", false
		}
	}
	return "", false
}

func (d *anyDecoder) literal(lit string) bool {
	if !bytes.HasPrefix(d.data[d.i:], []byte(lit)) {
		return false
	}
	d.i += len(lit)
	return true
}

// number reads a JSON number as json.Unmarshal does into an any
// (strconv.ParseFloat); false when it is not one or float64 cannot hold it.
func (d *anyDecoder) number() (any, bool) {
	start, j := d.i, d.i
	digits := func() bool {
		k := j
		for j < len(d.data) && '0' <= d.data[j] && d.data[j] <= '9' {
			j++
		}
		return j > k
	}
	if j < len(d.data) && d.data[j] == '-' {
		j++
	}
	switch {
	case j < len(d.data) && d.data[j] == '0':
		j++
	case !digits():
		return nil, false
	}
	if j < len(d.data) && d.data[j] == '.' {
		j++
		if !digits() {
			return nil, false
		}
	}
	if j < len(d.data) && (d.data[j] == 'e' || d.data[j] == 'E') {
		j++
		if j < len(d.data) && (d.data[j] == '+' || d.data[j] == '-') {
			j++
		}
		if !digits() {
			return nil, false
		}
	}
	f, err := strconv.ParseFloat(string(d.data[start:j]), 64)
	if err != nil {
		return nil, false
	}
	d.i = j
	return f, true
}

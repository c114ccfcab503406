package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/cockroachdb/apd/v3"

	"github.com/bpc-platform/bpc/core/canonjson"
)

// Value is a runtime value. Kind selects the meaningful members:
// Bool → B; Int → I; Text and Date → S; Dec → D (exactly Scale fractional
// digits); Qty → D (exactly QtyScale fractional digits) and Unit; Opt →
// Elems with zero (none) or one element; List → Elems; Map → Keys (sorted)
// and Elems; Record → Keys (member names, sorted) and Elems; Fact → Fact
// (a decoded JSON value: nil, bool, json.Number, string, []any, map[string]any).
//
// Values are immutable and share their parts, so a value may hold one part
// many times; depth (nesting of Opt, List, Map and Record) and parts (every
// appearance counted, saturating) describe its tree for the limits
// MaxValueDepth and MaxValueNodes. The constructors of composite values set
// them (shaped); they are zero for scalars, and sit in B's padding.
type Value struct {
	Kind  Kind
	B     bool
	depth uint16
	parts int32
	I     int64
	S     string
	D     *apd.Decimal
	Scale int
	Unit  string
	Keys  []string
	Elems []Value
	Fact  any
}

func boolVal(b bool) Value     { return Value{Kind: KindBool, B: b} }
func intVal(i int64) Value     { return Value{Kind: KindInt, I: i} }
func textVal(s string) Value   { return Value{Kind: KindText, S: s} }
func dateVal(s string) Value   { return Value{Kind: KindDate, S: s} }
func factVal(f any) Value      { return Value{Kind: KindFact, Fact: f} }
func noneVal() Value           { return Value{Kind: KindOpt} }
func someVal(v Value) Value    { return shaped(Value{Kind: KindOpt, Elems: []Value{v}}) }
func listVal(vs []Value) Value { return shaped(Value{Kind: KindList, Elems: vs}) }

// size is the number of parts of v counted as a tree (1 for a scalar).
func (v *Value) size() int {
	if v.parts == 0 {
		return 1
	}
	return int(v.parts)
}

// shaped returns v, a composite value, with depth and parts computed from
// its elements.
func shaped(v Value) Value {
	d, n := 0, 1
	for i := range v.Elems {
		e := &v.Elems[i]
		d = max(d, int(e.depth))
		n = min(n+e.size(), math.MaxInt32)
	}
	v.depth = uint16(min(d+1, math.MaxUint16))
	v.parts = int32(n)
	return v
}

// IsSome reports whether an Opt value holds a value.
func (v Value) IsSome() bool { return v.Kind == KindOpt && len(v.Elems) == 1 }

// MarshalCanonical encodes v as BPC-CJSON-1 bytes: Bool → true/false, Int →
// integer, Text → string, Date → "YYYY-MM-DD", Dec → string with exactly
// scale fractional digits, Qty → {"unit":u,"value":"…"} (6 digits), Opt →
// null or the inner value, List → array, Map and Record → object, Fact →
// the canonical JSON of the fact value.
func (v Value) MarshalCanonical() ([]byte, error) { return v.AppendCanonical(nil) }

// MaxEncodedBytes bounds a canonical encoding that holds values (a payload,
// a proof): a value may hold one part many times (a list of the same long
// text), so the bytes it writes are not bounded by its size in memory.
// Value.AppendCanonical stops once dst is longer than this, far above the
// artifact limits of a compile.
const MaxEncodedBytes = 64 << 20

// ErrEncodingTooLarge is the error (wrapped) of Value.AppendCanonical when
// the encoding would pass MaxEncodedBytes.
var ErrEncodingTooLarge = errors.New("rules: canonical encoding longer than MaxEncodedBytes")

// MarshalJSON returns the canonical encoding, so a Value inside a struct
// encodes the same way through encoding/json.
func (v Value) MarshalJSON() ([]byte, error) { return v.MarshalCanonical() }

// AppendCanonical appends the canonical encoding of v to dst (it implements
// canonjson.Appender, so trace data and payloads hold Values directly and are
// encoded once, when the proof or payload is written). Dates, decimals and
// unit names are plain ASCII and need no escaping; Map and Record keys are
// kept sorted by their bytes, the canonical order.
//
// dst is the whole document being written: once it is longer than
// MaxEncodedBytes, the encoding stops with ErrEncodingTooLarge.
func (v Value) AppendCanonical(dst []byte) ([]byte, error) {
	return v.appendCanonical(dst, MaxEncodedBytes)
}

// appendCanonical is AppendCanonical stopping once dst is longer than limit.
func (v Value) appendCanonical(dst []byte, limit int) ([]byte, error) {
	if len(dst) > limit {
		return dst, fmt.Errorf("%w (%d bytes)", ErrEncodingTooLarge, limit)
	}
	var err error
	switch v.Kind {
	case KindBool:
		return strconv.AppendBool(dst, v.B), nil
	case KindInt:
		return strconv.AppendInt(dst, v.I, 10), nil
	case KindText:
		return canonjson.AppendString(dst, v.S)
	case KindDate:
		return append(append(append(dst, '"'), v.S...), '"'), nil
	case KindDec:
		return appendDec(append(dst, '"'), v.D), nil
	case KindQty:
		dst = append(append(append(dst, `{"unit":"`...), v.Unit...), `","value":"`...)
		return append(appendDec(dst, v.D), '}'), nil
	case KindOpt:
		if len(v.Elems) == 0 {
			return append(dst, "null"...), nil
		}
		return v.Elems[0].appendCanonical(dst, limit)
	case KindList:
		dst = append(dst, '[')
		for i, e := range v.Elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = e.appendCanonical(dst, limit); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case KindMap, KindRecord:
		dst = append(dst, '{')
		for i, k := range v.Keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = canonjson.AppendString(dst, k); err != nil {
				return dst, err
			}
			if dst, err = v.Elems[i].appendCanonical(append(dst, ':'), limit); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case KindFact:
		return canonjson.Append(dst, v.Fact)
	case 0: // the zero Value, as encoding/json wrote it before
		return append(dst, "null"...), nil
	}
	return dst, fmt.Errorf("rules: cannot encode a value of kind %d", v.Kind)
}

// appendDec appends decText(d) and a closing quote.
func appendDec(dst []byte, d *apd.Decimal) []byte {
	return append(append(dst, decText(d)...), '"')
}

// jsonValue returns a tree that encoding/json marshals to v's encoding.
func (v Value) jsonValue() any {
	switch v.Kind {
	case KindBool:
		return v.B
	case KindInt:
		return json.Number(strconv.FormatInt(v.I, 10))
	case KindText, KindDate:
		return v.S
	case KindDec:
		return decText(v.D)
	case KindQty:
		return map[string]any{"unit": v.Unit, "value": decText(v.D)}
	case KindOpt:
		if len(v.Elems) == 0 {
			return nil
		}
		return v.Elems[0].jsonValue()
	case KindList:
		out := make([]any, len(v.Elems))
		for i, e := range v.Elems {
			out[i] = e.jsonValue()
		}
		return out
	case KindMap, KindRecord:
		out := make(map[string]any, len(v.Keys))
		for i, k := range v.Keys {
			out[k] = v.Elems[i].jsonValue()
		}
		return out
	case KindFact:
		return v.Fact
	}
	return nil
}

// decText formats d in plain notation with its exponent's digits; a zero
// never carries a minus sign.
func decText(d *apd.Decimal) string {
	if d.IsZero() && d.Negative {
		c := *d
		c.Negative = false
		return c.Text('f')
	}
	return d.Text('f')
}

// String renders v as its canonical JSON text, or "<invalid>".
func (v Value) String() string {
	b, err := v.MarshalCanonical()
	if err != nil {
		return "<invalid>"
	}
	return string(b)
}

package rules

import (
	"encoding/json"
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
type Value struct {
	Kind  Kind
	B     bool
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
func someVal(v Value) Value    { return Value{Kind: KindOpt, Elems: []Value{v}} }
func listVal(vs []Value) Value { return Value{Kind: KindList, Elems: vs} }

// IsSome reports whether an Opt value holds a value.
func (v Value) IsSome() bool { return v.Kind == KindOpt && len(v.Elems) == 1 }

// MarshalCanonical encodes v as BPC-CJSON-1 bytes: Bool → true/false, Int →
// integer, Text → string, Date → "YYYY-MM-DD", Dec → string with exactly
// scale fractional digits, Qty → {"unit":u,"value":"…"} (6 digits), Opt →
// null or the inner value, List → array, Map and Record → object, Fact →
// the canonical JSON of the fact value.
func (v Value) MarshalCanonical() ([]byte, error) {
	// Fast path for scalars whose encoding needs no escaping: digits, signs,
	// dots, dates and unit names are plain ASCII. It yields exactly the bytes
	// of the general path (asserted by tests).
	switch v.Kind {
	case KindBool:
		return strconv.AppendBool(nil, v.B), nil
	case KindInt:
		return strconv.AppendInt(nil, v.I, 10), nil
	case KindDate, KindDec:
		s := v.S
		if v.Kind == KindDec {
			s = decText(v.D)
		}
		return []byte(`"` + s + `"`), nil
	case KindQty:
		return []byte(`{"unit":"` + v.Unit + `","value":"` + decText(v.D) + `"}`), nil
	case KindOpt:
		if len(v.Elems) == 0 {
			return []byte("null"), nil
		}
		return v.Elems[0].MarshalCanonical()
	}
	return canonjson.Marshal(v.jsonValue())
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

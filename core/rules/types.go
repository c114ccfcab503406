package rules

import (
	"slices"
	"strconv"
	"strings"
)

// MaxScale is the largest scale s of Dec(s).
const MaxScale = 18

// QtyScale is the fixed number of fractional digits of every Qty magnitude.
const QtyScale = 6

// Kind is the kind of a type (and of a value of that type).
type Kind int

// The kinds of BPC-RULES-1 types. KindFact is internal: an untyped JSON value
// taken from a fact payload; it cannot be declared.
const (
	KindBool Kind = iota + 1
	KindInt
	KindText
	KindDate
	KindDec
	KindQty
	KindOpt
	KindList
	KindMap
	KindRecord
	KindFact
)

// RecordField is one named member of a Record type.
type RecordField struct {
	Name string
	Type *Type
}

// Type is a BPC-RULES-1 type. Scale is set for Dec, Unit for Qty, Elem for
// Opt, List and Map (the value type; keys are Text), Fields for Record
// (sorted by name). An Opt or List with a nil Elem is the type of `none`
// or of an empty list before it meets a concrete type.
type Type struct {
	Kind   Kind
	Scale  int
	Unit   string
	Elem   *Type
	Fields []RecordField
}

// Convenience singletons for the scalar types.
var (
	tBool = &Type{Kind: KindBool}
	tInt  = &Type{Kind: KindInt}
	tText = &Type{Kind: KindText}
	tDate = &Type{Kind: KindDate}
	tFact = &Type{Kind: KindFact}
)

func decType(s int) *Type    { return &Type{Kind: KindDec, Scale: s} }
func qtyType(u string) *Type { return &Type{Kind: KindQty, Unit: u} }
func optType(t *Type) *Type  { return &Type{Kind: KindOpt, Elem: t} }
func listType(t *Type) *Type { return &Type{Kind: KindList, Elem: t} }
func mapType(t *Type) *Type  { return &Type{Kind: KindMap, Elem: t} }
func recordType(fs []RecordField) *Type {
	fs = slices.Clone(fs)
	slices.SortFunc(fs, func(a, b RecordField) int { return strings.Compare(a.Name, b.Name) })
	return &Type{Kind: KindRecord, Fields: fs}
}

// complianceType is the result type of emitCompliance.
var complianceType = recordType([]RecordField{{"code", tText}, {"ok", tBool}, {"detail", tText}})

// String renders the type in source syntax, e.g. "Opt(Dec(2))"; an unknown
// element renders as "?".
func (t *Type) String() string {
	if t == nil {
		return "?"
	}
	switch t.Kind {
	case KindBool:
		return "Bool"
	case KindInt:
		return "Int"
	case KindText:
		return "Text"
	case KindDate:
		return "Date"
	case KindFact:
		return "Fact"
	case KindDec:
		return "Dec(" + strconv.Itoa(t.Scale) + ")"
	case KindQty:
		return "Qty(" + t.Unit + ")"
	case KindOpt:
		return "Opt(" + t.Elem.String() + ")"
	case KindList:
		return "List(" + t.Elem.String() + ")"
	case KindMap:
		return "Map(Text, " + t.Elem.String() + ")"
	case KindRecord:
		parts := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			parts[i] = f.Name + ": " + f.Type.String()
		}
		return "Record(" + strings.Join(parts, ", ") + ")"
	}
	return "?"
}

// unify returns the common type of a and b, where a nil element (from `none`
// or an empty list) matches anything; ok is false when they differ.
func unify(a, b *Type) (*Type, bool) {
	if a == nil {
		return b, true
	}
	if b == nil {
		return a, true
	}
	if a.Kind != b.Kind {
		return nil, false
	}
	switch a.Kind {
	case KindDec:
		return a, a.Scale == b.Scale
	case KindQty:
		return a, a.Unit == b.Unit
	case KindOpt, KindList, KindMap:
		e, ok := unify(a.Elem, b.Elem)
		if !ok {
			return nil, false
		}
		return &Type{Kind: a.Kind, Elem: e}, true
	case KindRecord:
		if len(a.Fields) != len(b.Fields) {
			return nil, false
		}
		fs := make([]RecordField, len(a.Fields))
		for i := range a.Fields {
			if a.Fields[i].Name != b.Fields[i].Name {
				return nil, false
			}
			e, ok := unify(a.Fields[i].Type, b.Fields[i].Type)
			if !ok {
				return nil, false
			}
			fs[i] = RecordField{Name: a.Fields[i].Name, Type: e}
		}
		return &Type{Kind: KindRecord, Fields: fs}, true
	}
	return a, true
}

// recordFieldType returns the type of member name of a Record type.
func (t *Type) recordFieldType(name string) (*Type, bool) {
	for _, f := range t.Fields {
		if f.Name == name {
			return f.Type, true
		}
	}
	return nil, false
}

// unitInfo places a unit in its dimension with its factor to the dimension's base unit.
type unitInfo struct {
	dimension string
	factor    int64
}

// units is the closed set of BPC-RULES-1 units.
var units = map[string]unitInfo{
	"g":             {"mass", 1},
	"kg":            {"mass", 1000},
	"Wh":            {"energy", 1},
	"kWh":           {"energy", 1000},
	"gCO2e":         {"emissions", 1},
	"kgCO2e":        {"emissions", 1000},
	"gCO2e_per_kWh": {"intensity", 1},
	"pct":           {"ratio", 1},
	"each":          {"count", 1},
}

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
//
// Types are immutable and shared, so one type may appear many times inside
// another; size counts those appearances (the parts a printed or unified
// type walks), saturating, and is set by the constructors of composite
// types (zero for a scalar, which counts as one part). The checker keeps
// every type within MaxTypeNodes.
type Type struct {
	Kind   Kind
	Scale  int
	Unit   string
	Elem   *Type
	Fields []RecordField
	size   int
}

// maxSize is where sizes saturate (types and values), far above every limit.
const maxSize = 1 << 40

// parts is the number of parts of t counted as a tree: 0 for the unknown
// element of none, 1 for a scalar.
func (t *Type) parts() int {
	switch {
	case t == nil:
		return 0
	case t.size == 0:
		return 1
	}
	return t.size
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
func optType(t *Type) *Type  { return elemType(KindOpt, t) }
func listType(t *Type) *Type { return elemType(KindList, t) }
func mapType(t *Type) *Type  { return elemType(KindMap, t) }

// elemType is Opt, List or Map of t.
func elemType(k Kind, t *Type) *Type { return &Type{Kind: k, Elem: t, size: min(1+t.parts(), maxSize)} }

func recordType(fs []RecordField) *Type {
	fs = slices.Clone(fs)
	slices.SortFunc(fs, func(a, b RecordField) int { return strings.Compare(a.Name, b.Name) })
	return sortedRecordType(fs)
}

// sortedRecordType is the Record of fs, which are sorted by name already.
func sortedRecordType(fs []RecordField) *Type {
	n := 1
	for _, f := range fs {
		n = min(n+f.Type.parts(), maxSize)
	}
	return &Type{Kind: KindRecord, Fields: fs, size: n}
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
	case KindBool, KindInt, KindText, KindDate, KindFact:
		return kindName(t.Kind)
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
// or an empty list) matches anything; ok is false when they differ. When b
// adds nothing to a, the result is a itself: the checker unifies a list's
// type with each of its elements in turn, and that must not allocate (or
// copy a large record type) per element.
func unify(a, b *Type) (*Type, bool) {
	if a == nil || a == b {
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
		switch {
		case !ok:
			return nil, false
		case e == a.Elem:
			return a, true
		}
		return elemType(a.Kind, e), true
	case KindRecord:
		if len(a.Fields) != len(b.Fields) {
			return nil, false
		}
		var fs []RecordField // nil while every member is a's own
		for i := range a.Fields {
			if a.Fields[i].Name != b.Fields[i].Name {
				return nil, false
			}
			e, ok := unify(a.Fields[i].Type, b.Fields[i].Type)
			if !ok {
				return nil, false
			}
			if e != a.Fields[i].Type && fs == nil {
				fs = slices.Clone(a.Fields)
			}
			if fs != nil {
				fs[i].Type = e
			}
		}
		if fs == nil {
			return a, true
		}
		return sortedRecordType(fs), true
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

package rules

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
)

func TestCheckErrors(t *testing.T) {
	t.Parallel()
	cases := []errorCase{
		{"unit mismatch add", "field a : Qty(kg) = qty(1, kg) + qty(1, g);", errcode.UnitMismatch, "a", 1, 32},
		{"unit mismatch compare", "field a : Bool = qty(1, kg) < qty(1, g);", errcode.UnitMismatch, "a", 1, 29},
		{"unit mismatch convert", "field a : Qty(kWh) = convert(qty(1, kg), kWh);", errcode.UnitMismatch, "a", 1, 42},
		{"unknown unit", "field a : Qty(kg) = qty(1, lb);", errcode.UnitMismatch, "a", 1, 28},
		{"unit arg not a name", `field a : Qty(kg) = qty(1, "kg");`, errcode.RuleTypeError, "a", 1, 28},
		{"unknown field", "field a : Int = 1;\nfield b : Int = field(\"a.c\");", errcode.RuleTypeError, "b", 2, 23},
		{"field arg not literal", "field a : Text = \"a\";\nfield b : Int = field(field(\"a\"));", errcode.RuleTypeError, "b", 2, 23},
		{"wrong arity", "field a : Bool = isSome(none, none);", errcode.RuleTypeError, "a", 1, 18},
		{"wrong arity variadic", "field a : List(Int) = list();", errcode.RuleTypeError, "a", 1, 23},
		{"lambda arity", "field a : List(Int) = map(list(1), (a, b) => a);", errcode.RuleTypeError, "a", 1, 36},
		{"not a lambda", "field a : List(Int) = map(list(1), 1);", errcode.RuleTypeError, "a", 1, 36},
		{"bare lambda", "field a : Int = (x) => x;", errcode.RuleTypeError, "a", 1, 17},
		{"unknown function", "field a : Int = foo(1);", errcode.RuleTypeError, "a", 1, 17},
		{"unknown variable", "field a : Int = x;", errcode.RuleTypeError, "a", 1, 17},
		{"duplicate field", "field a : Int = 1;\nfield a : Int = 2;", errcode.RuleTypeError, "a", 2, 7},
		{"declared type mismatch", "field a : Dec(2) = 1.5;", errcode.RuleTypeError, "a", 1, 20},
		{"scale mismatch add", "field a : Dec(2) = 1.50 + 1.5;", errcode.RuleTypeError, "a", 1, 25},
		{"product scale cap", "field a : Dec(18) = 1.0000000000 * 1.000000000;", errcode.RuleTypeError, "a", 1, 34},
		{"int plus dec", "field a : Int = 1 + 1.5;", errcode.RuleTypeError, "a", 1, 19},
		{"int division", "field a : Int = 4 / 2;", errcode.RuleTypeError, "a", 1, 19},
		{"and non bool", "field a : Bool = 1 && true;", errcode.RuleTypeError, "a", 1, 20},
		{"compare mixed", "field a : Bool = 1 < \"x\";", errcode.RuleTypeError, "a", 1, 20},
		{"eq on lists", "field a : Bool = list(1) == list(1);", errcode.RuleTypeError, "a", 1, 26},
		{"qty times qty", "field a : Qty(kg) = qty(1, kg) * qty(1, kg);", errcode.RuleTypeError, "a", 1, 32},
		{"qty times qty units", "field a : Qty(kg) = qty(1, kg) * qty(1, g);", errcode.UnitMismatch, "a", 1, 32},
		{"not on int", "field a : Bool = !1;", errcode.RuleTypeError, "a", 1, 18},
		{"neg on text", "field a : Text = -\"x\";", errcode.RuleTypeError, "a", 1, 18},
		{"if cond", "field a : Int = if (1) then 1 else 2;", errcode.RuleTypeError, "a", 1, 21},
		{"if branches", "field a : Int = if (true) then 1 else \"x\";", errcode.RuleTypeError, "a", 1, 17},
		{"assert cond", "field a : Int = assert(1, \"CODE\", \"m\"); 1;", errcode.RuleTypeError, "a", 1, 24},
		{"assert code", "field a : Int = assert(true, \"bad\", \"m\"); 1;", errcode.RuleTypeError, "a", 1, 30},
		{"require code", "field a : Int = requireSome(some(1), \"x\", \"m\");", errcode.RuleTypeError, "a", 1, 38},
		{"require msg literal", "field a : Int = requireSome(some(1), \"CODE\", 1);", errcode.RuleTypeError, "a", 1, 46},
		{"arg kind", "field a : Bool = isSome(1);", errcode.RuleTypeError, "a", 1, 25},
		{"unwrapOr default", "field a : Int = unwrapOr(some(1), \"x\");", errcode.RuleTypeError, "a", 1, 35},
		{"scale arg", "field a : Dec(2) = toDec(1, 19);", errcode.RuleTypeError, "a", 1, 29},
		{"qty of text", "field a : Qty(kg) = qty(\"1\", kg);", errcode.RuleTypeError, "a", 1, 25},
		{"sumDec of ints", "field a : Dec(0) = sumDec(list(1));", errcode.RuleTypeError, "a", 1, 27},
		{"filter not bool", "field a : List(Int) = filter(list(1), (x) => x);", errcode.RuleTypeError, "a", 1, 39},
		{"toMap key not text", "field a : Map(Text, Int) = toMap(list(1), (x) => x, (x) => x);", errcode.RuleTypeError, "a", 1, 43},
		{"fold step type", "field a : Int = fold(list(1), 0, (a, x) => \"s\");", errcode.RuleTypeError, "a", 1, 34},
		{"record unknown member", "field a : Int = recordGet(record(x: 1), \"y\");", errcode.RuleTypeError, "a", 1, 41},
		{"record dup member", "field a : Int = recordGet(record(x: 1, x: 2), \"x\");", errcode.RuleTypeError, "a", 1, 43},
		{"list elems differ", "field a : List(Int) = list(1, \"x\");", errcode.RuleTypeError, "a", 1, 31},
		{"bare none", "field a : Int = requireSome(none, \"CODE\", \"m\");", errcode.RuleTypeError, "a", 1, 17},
		{"earliest error wins", "field b : Int = x;\nfield a : Int = y;", errcode.RuleTypeError, "b", 1, 17},
		{"cycle", "field a : Int = field(\"b\");\nfield b : Int = field(\"c\") + 1;\nfield c : Int = field(\"a\");", errcode.RuleCycleDetected, "a", 1, 7},
		{"self cycle", "field z : Int = 1;\nfield s : Int = field(\"s\");", errcode.RuleCycleDetected, "s", 2, 7},
	}
	requireErrorCases(t, cases, checkError)
}

func TestCycleNamesFieldsInOrder(t *testing.T) {
	t.Parallel()
	src := `
field x.ok : Int = 1;
field c.c : Int = field("c.a") + field("x.ok");
field c.a : Int = field("c.b");
field c.b : Int = field("c.c");
field d.d : Int = field("c.a");
`
	_, err := Check(src)
	require.Equal(t, errcode.RuleCycleDetected, errcode.CodeOf(err))
	require.Contains(t, err.Error(), "c.a -> c.b -> c.c -> c.a")
	require.Equal(t, []string{"c.a", "c.b", "c.c"}, errcode.As(err).Details["cycle"])
}

func TestOrderIsKahnWithLexicalTieBreak(t *testing.T) {
	t.Parallel()
	src := `
field z.total : Int = field("b.part") + field("a.part");
field b.part : Int = field("m.base") * 2;
field a.part : Int = 1;
field m.base : Int = 3;
field c.alone : Int = 4;
`
	p, err := Check(src)
	require.NoError(t, err)
	require.Equal(t, []string{"a.part", "c.alone", "m.base", "b.part", "z.total"}, p.Order())
	require.Equal(t, []string{"a.part", "b.part"}, p.Deps["z.total"])
	require.Equal(t, "m.base", p.Field("m.base").Path)
	require.Nil(t, p.Field("nope"))
}

func TestUnifyAndEquatable(t *testing.T) {
	t.Parallel()
	r1 := recordType([]RecordField{{"a", optType(nil)}})
	r2 := recordType([]RecordField{{"a", optType(tInt)}})
	u, ok := unify(r1, r2)
	require.True(t, ok)
	require.Equal(t, "Record(a: Opt(Int))", u.String())
	_, ok = unify(r1, recordType([]RecordField{{"b", tInt}}))
	require.False(t, ok)
	_, ok = unify(r1, recordType([]RecordField{{"a", tInt}, {"b", tInt}}))
	require.False(t, ok)
	_, ok = unify(r2, recordType([]RecordField{{"a", optType(tText)}}))
	require.False(t, ok)
	_, ok = unify(listType(tInt), listType(tText))
	require.False(t, ok)
	require.True(t, equatable(optType(decType(2))))
	require.False(t, equatable(listType(tInt)))
}

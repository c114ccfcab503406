package rules

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
)

// spec7Source uses every construct of SPEC §7.
const spec7Source = `
// every SPEC §7 construct
field t.bool : Bool = true || false && !false;
field t.int : Int = -3 + 4 * 2 - 1;
field t.text : Text = "a \"quoted\" \\ line\n\ttab";
field t.date : Date = date("2024-02-29");
field t.dec : Dec(2) = 12.50;
field t.qty : Qty(kg) = qty(12.5, kg);
field t.opt : Bool = isSome(getFact("bom", "cell"));
field t.none : Opt(Int) = none;
field t.list : Int = len(getFactsByPrefix("bom", "c"));
field t.map : Map(Text, Int) = toMap(list(1, 2), (x) => toText(x), (x) => x * 10);
field t.rec : Record(code: Text, ok: Bool, detail: Text) = emitCompliance("C1", true, "d");
field t.let : Int = let x = 2; x * x;
field t.if : Int = if (1 < 2) then 1 else 2;
field t.assert : Int = assert(1 <= 2, "MUST_HOLD", "one is at most two"); 5;
field t.cmp : Bool = 1 == 1 && 1 != 2 && 2 > 1 && 2 >= 2 && 1.5 < 2.50;
field t.div : Dec(2) = 10.00 / 4.0;
field t.ref : Int = field("t.int");
field t.rg : Dec(3) = toDec(requireSome(recordGet(requireSome(getFact("bom", "cell"), "NO_CELL", "cell missing"), "mass"), "NO_MASS", "no mass"), 3);
field t.some : Bool = !field("t.opt");
field t.unwrap : Int = unwrapOr(field("t.none"), 7);
field t.todec : Dec(3) = toDec("1.2345", 3);
field t.toqty : Qty(g) = toQty(2, g);
field t.conv : Qty(g) = convert(field("t.qty"), g);
field t.sumq : Qty(kg) = sumQty(list(qty(1, kg), qty(2.5, kg)));
field t.sumd : Dec(1) = sumDec(map(list(1, 2), (x) => toDec(x, 1)));
field t.filter : List(Int) = filter(list(1, 2, 3), (x) => x > 1);
field t.fold : Int = fold(list(1, 2, 3), 0, (acc, x) => acc + x);
`

func TestParseEverySpecConstruct(t *testing.T) {
	t.Parallel()
	f, err := Parse(spec7Source)
	require.NoError(t, err)
	require.Len(t, f.Fields, 27)
	require.Equal(t, "t.bool", f.Fields[0].Path)
	require.Equal(t, Pos{Line: 3, Col: 7}, f.Fields[0].Pos)
	require.Equal(t, "Record(code: Text, detail: Text, ok: Bool)", f.Fields[10].Type.String())
	_, err = Check(spec7Source)
	require.NoError(t, err)
}

func TestTypeStrings(t *testing.T) {
	t.Parallel()
	f, err := Parse(`field a : Map(Text, List(Opt(Dec(3)))) = x; field b : Record(z: Qty(kWh), a: Date) = y;`)
	require.NoError(t, err)
	require.Equal(t, "Map(Text, List(Opt(Dec(3))))", f.Fields[0].Type.String())
	require.Equal(t, "Record(a: Date, z: Qty(kWh))", f.Fields[1].Type.String())
	require.Equal(t, "?", (*Type)(nil).String())
	require.Equal(t, "Kind(99)", kindName(Kind(99)))
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	cases := []errorCase{
		{"missing semicolon", "field a : Int = 1", errcode.RuleParseError, "a", 1, 18},
		{"bad char", "field a : Int = 1 # 2;", errcode.RuleParseError, "", 1, 19},
		{"unterminated string", "field a : Text = \"abc", errcode.RuleParseError, "", 1, 18},
		{"bad escape", `field a : Text = "a\q";`, errcode.RuleParseError, "", 1, 20},
		{"newline in string", "field a : Text = \"a\nb\";", errcode.RuleParseError, "", 1, 20},
		{"number then letter", "field a : Int = 12kg;", errcode.RuleParseError, "", 1, 19},
		{"int too big", "field a : Int = 9223372036854775808;", errcode.RuleParseError, "a", 1, 17},
		{"too many int digits", "field a : Int = 1234567890123456789012345678901;", errcode.RuleParseError, "", 1, 17},
		{"too many frac digits", "field a : Dec(2) = 1.1234567890123456789;", errcode.RuleParseError, "", 1, 20},
		{"bad date", `field a : Date = date("2023-02-29");`, errcode.RuleParseError, "a", 1, 23},
		{"date not literal", `field a : Date = date(x);`, errcode.RuleParseError, "a", 1, 23},
		{"unknown type", "field a : Float = 1;", errcode.RuleParseError, "a", 1, 11},
		{"scale too big", "field a : Dec(19) = 1;", errcode.RuleTypeError, "a", 1, 15},
		{"scale not int", "field a : Dec(x) = 1;", errcode.RuleParseError, "a", 1, 15},
		{"unknown unit in type", "field a : Qty(lb) = 1;", errcode.UnitMismatch, "a", 1, 15},
		{"map key not text", "field a : Map(Int, Int) = 1;", errcode.RuleParseError, "a", 1, 15},
		{"dup record member", "field a : Record(x: Int, x: Int) = 1;", errcode.RuleTypeError, "a", 1, 26},
		{"bad path", "field A.b : Int = 1;", errcode.RuleParseError, "", 1, 7},
		{"not field", "fieldx a : Int = 1;", errcode.RuleParseError, "", 1, 1},
		{"reserved let name", "field a : Int = let if = 1; 2;", errcode.RuleParseError, "a", 1, 21},
		{"keyword in expr", "field a : Int = then;", errcode.RuleParseError, "a", 1, 17},
		{"unexpected punct", "field a : Int = );", errcode.RuleParseError, "a", 1, 17},
		{"eof in expr", "field a : Int = ", errcode.RuleParseError, "a", 1, 17},
		{"if missing then", "field a : Int = if (true) 1 else 2;", errcode.RuleParseError, "a", 1, 27},
		{"assert code not string", "field a : Int = assert(true, CODE, \"m\"); 1;", errcode.RuleParseError, "a", 1, 30},
		{"lambda same params", "field a : Int = fold(list(1), 0, (x, x) => x);", errcode.RuleParseError, "a", 1, 34},
		{"invalid utf8", "field a : Text = \"\xff\";", errcode.RuleParseError, "", 1, 19},
		{"invalid utf8 outside", "field a : Int = \xff;", errcode.RuleParseError, "", 1, 17},
		{"unclosed paren", "field a : Int = (1;", errcode.RuleParseError, "a", 1, 19},
	}
	requireErrorCases(t, cases, checkError)
}

func TestParseDepthLimit(t *testing.T) {
	t.Parallel()
	src := "field a : Int = "
	for range 500 {
		src += "("
	}
	_, err := Parse(src + "1")
	require.Equal(t, errcode.RuleParseError, errcode.CodeOf(err))
	require.Contains(t, err.Error(), "nesting deeper")
}

// errorCase is a rule source and the error it must fail with: its code and
// where it is located (field, line:col).
type errorCase struct {
	name, src string
	code      errcode.Code
	field     string
	line, col int
}

// requireErrorCases runs each case as a parallel subtest in which run(src)
// must fail as the case says.
func requireErrorCases(t *testing.T, cases []errorCase, run func(t *testing.T, src string) error) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			requireErrorAt(t, run(t, tc.src), tc.code, tc.field, tc.line, tc.col)
		})
	}
}

// checkError is the error Check returns for src.
func checkError(_ *testing.T, src string) error {
	_, err := Check(src)
	return err
}

// requireErrorAt asserts err carries code and is located at field, line:col.
func requireErrorAt(t *testing.T, err error, code errcode.Code, field string, line, col int) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, errcode.CodeOf(err), err.Error())
	gotField, pos, ok := ErrorLocation(err)
	require.True(t, ok, err.Error())
	require.Equal(t, field, gotField, err.Error())
	require.Equal(t, Pos{Line: line, Col: col}, pos, err.Error())
}

func TestErrorLocationOnForeignError(t *testing.T) {
	t.Parallel()
	_, _, ok := ErrorLocation(errcode.New(errcode.Internal, "x"))
	require.False(t, ok)
	_, _, ok = ErrorLocation(nil)
	require.False(t, ok)
}

func FuzzParse(f *testing.F) {
	f.Add(spec7Source)
	f.Add("field a : Int = 1;")
	f.Add(`field a.b : Opt(Dec(2)) = if (x) then none else some(1.00);`)
	f.Add("field a : Int = fold(list(1), 0, (a, b) => a + b);")
	f.Add(`field a : Record(x: Int) = record(x: 1);`)
	addNestingSeeds(f, false)
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Check(src)
		if err != nil {
			if errcode.As(err) == nil {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// A program that checks must also evaluate without panicking.
		_, _ = p.Evaluate(nil)
	})
}

// Malformed let, if and assert expressions are RULE_PARSE_ERRORs at the
// offending token.
func TestParseErrorsInCompoundExpressions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		src       string
		line, col int
	}{
		{"field a : Int = let 1 = 2; 3;", 1, 21},
		{"field a : Int = let if = 2; 3;", 1, 21},
		{"field a : Int = let x 2; x;", 1, 23},
		{"field a : Int = let x = ; x;", 1, 25},
		{"field a : Int = let x = 2 x;", 1, 27},
		{"field a : Int = let x = 2; ;", 1, 28},
		{"field a : Int = if true then 1 else 2;", 1, 20},
		{"field a : Int = if (true 1 else 2;", 1, 26},
		{"field a : Int = if (true) 1 else 2;", 1, 27},
		{"field a : Int = if (true) then 1 2;", 1, 34},
		{"field a : Int = if (true) then 1 else ;", 1, 39},
		{"field a : Int = if () then 1 else 2;", 1, 21},
		{"field a : Int = if (true) then else 2;", 1, 32},
		{"field a : Bool = assert true, \"C\", \"m\");", 1, 25},
		{"field a : Bool = assert(true \"C\", \"m\");", 1, 30},
		{"field a : Bool = assert(true, C, \"m\");", 1, 31},
		{"field a : Bool = assert(true, \"C\" \"m\");", 1, 35},
		{"field a : Bool = assert(true, \"C\", m);", 1, 36},
		{"field a : Bool = assert(true, \"C\", \"m\";", 1, 39},
		{"field a : Bool = assert(, \"C\", \"m\");", 1, 25},
	}
	for _, tc := range cases {
		_, err := Check(tc.src)
		requireErrorAt(t, err, errcode.RuleParseError, "a", tc.line, tc.col)
	}
}

// Type errors name the kinds involved.
func TestTypeErrorsNameKinds(t *testing.T) {
	t.Parallel()
	for src, kind := range map[string]string{
		`field a : Int = true;`:                          "Bool",
		`field a : Int = "x";`:                           "Text",
		`field a : Int = date("2024-01-01");`:            "Date",
		`field a : Int = 1.5;`:                           "Dec",
		`field a : Int = qty(1.0, kg);`:                  "Qty",
		`field a : Int = none;`:                          "Opt",
		`field a : Int = list(1, 2);`:                    "List",
		`field a : Int = record(x: 1);`:                  "Record",
		`field a : Int = getFactsByPrefix("bom", "m/");`: "List",
	} {
		_, err := Check(src)
		require.Error(t, err, src)
		require.Equal(t, errcode.RuleTypeError, errcode.CodeOf(err), "%s: %v", src, err)
		require.Contains(t, err.Error(), kind, src)
	}
	require.Equal(t, "Kind(99)", kindName(Kind(99)))
	require.Equal(t, "Map", kindName(KindMap))
	require.Equal(t, "Fact", kindName(KindFact))
}

// Every expression node reports the position of its token.
func TestExpressionPositions(t *testing.T) {
	t.Parallel()
	f, err := Parse(`field a : Int = let x = -1; if (x > 0) then assert(true, "C", "m"); x else x;`)
	require.NoError(t, err)
	let := f.Fields[0].Expr.(*Let)
	require.Equal(t, Pos{1, 17}, let.Position())
	require.Equal(t, Pos{1, 25}, let.Value.Position())
	require.Equal(t, Pos{1, 26}, let.Value.(*Unary).X.Position())
	iff := let.Body.(*If)
	require.Equal(t, Pos{1, 29}, iff.Position())
	require.Equal(t, Pos{1, 35}, iff.Cond.Position())
	require.Equal(t, Pos{1, 33}, iff.Cond.(*Binary).L.Position())
	require.Equal(t, Pos{1, 45}, iff.Then.Position())
	require.Equal(t, Pos{1, 52}, iff.Then.(*Assert).Cond.Position())
	require.Equal(t, Pos{1, 69}, iff.Then.(*Assert).Body.Position())
	require.Equal(t, Pos{1, 76}, iff.Else.Position())

	f, err = Parse(`field b : Text = concat("x", toText(2.50), toText(date("2024-01-01")), toText(isSome(none)));`)
	require.NoError(t, err)
	call := f.Fields[0].Expr.(*Call)
	require.Equal(t, Pos{1, 18}, call.Position())
	require.Equal(t, Pos{1, 25}, call.Args[0].Position())
	require.Equal(t, Pos{1, 37}, call.Args[1].(*Call).Args[0].Position())
	require.Equal(t, Pos{1, 51}, call.Args[2].(*Call).Args[0].Position())
	require.Equal(t, Pos{1, 86}, call.Args[3].(*Call).Args[0].(*Call).Args[0].Position())
}

package rules

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
)

const testRules = `
field cf.total : Dec(2) = toDec(requireSome(recordGet(requireSome(getFact("pcf", "total"), "PCF_MISSING", "no pcf"), "value"), "PCF_VALUE", "no value"), 2);
field cf.qty : Qty(kgCO2e) = toQty(field("cf.total"), kgCO2e);
field cf.ok : Bool = field("cf.total") < 100.00;
field cf.count : Int = len(getFactsByPrefix("pcf", ""));
`

const testSource = `
// examples
example pcf_ok: {
  fact f("pcf", "total") = {"value": "61.20", "extra": [1, true, null, "\u00e9"]};
} => expect(cf.total, ==, 61.20); expect(cf.qty, ==, qty(61.2, kgCO2e)); expect(cf.ok, ==, true); expect(cf.count, >=, 1);

example pcf_missing: { } => expect_error("PCF_MISSING");

property dec_add: cases(200) seed(7) => forall x: Dec(2). implies(x > 0.00, x + x > x);
property int_range: cases(100) seed(1) => forall n: Int(-5, 5). implies(true, n >= -5 && n <= 5);
property opt_list: cases(50) seed(3) => forall xs: List(Opt(Qty(kg))). implies(true, len(xs) <= 5);
property rec: cases(50) seed(4) => forall r: Record(d: Date, t: Text, b: Bool). implies(true, recordGet(r, "d") >= date("2000-01-01"));
`

func mustProgram(t testing.TB, src string) *Program {
	t.Helper()
	p, err := Check(src)
	require.NoError(t, err)
	return p
}

func TestRunTestsPasses(t *testing.T) {
	t.Parallel()
	rep, err := RunTests(t.Context(), mustProgram(t, testRules), testSource, 42)
	require.NoError(t, err)
	require.Nil(t, rep.FirstFailure, rep.String())
	require.Equal(t, TestReport{TotalCases: 402, Passed: 402}, *rep)
	require.Equal(t, "402 cases, 402 passed, 0 failed", rep.String())
}

func TestRunTestsReportsFirstFailure(t *testing.T) {
	t.Parallel()
	src := `
example wrong: { fact f("pcf", "total") = {"value": "61.20"}; } => expect(cf.ok, ==, true); expect(cf.total, ==, 61.21);
example no_error: { fact f("pcf", "total") = {"value": "1"}; } => expect_error("PCF_MISSING");
example other_error: { } => expect_error("PCF_VALUE");
example eval_error: { } => expect(cf.ok, ==, true);
property bad: cases(10) seed(9) => forall x: Int. implies(x != 0, x > 0);
property boom: cases(3) seed(9) => forall x: Dec(1). implies(true, 1.0 / 0.0 > x);
property preboom: cases(3) seed(9) => forall x: Dec(1). implies(1.0 / 0.0 > x, true);
`
	rep, err := RunTests(t.Context(), mustProgram(t, testRules), src, 1)
	require.NoError(t, err)
	require.Equal(t, 20, rep.TotalCases)
	require.Equal(t, rep.TotalCases, rep.Passed+rep.Failed)
	require.Positive(t, rep.Failed)
	f := rep.FirstFailure
	require.Equal(t, "wrong", f.Test)
	require.Equal(t, 0, f.Case)
	require.Equal(t, `cf.total == "61.21"`, f.Expected)
	require.Equal(t, `"61.20"`, f.Actual)
	require.JSONEq(t, `{"facts":[{"fact_key":"total","fact_type":"pcf","payload":{"value":"61.20"}}]}`, string(f.Inputs))
	require.Contains(t, rep.String(), "first failure: wrong case 0")

	// Each failing kind on its own.
	for _, tc := range []struct{ src, expected, actual string }{
		{`example a: { fact f("pcf", "total") = {"value": "1"}; } => expect_error("PCF_MISSING");`, "error PCF_MISSING", "no error"},
		{`example a: { } => expect_error("PCF_VALUE");`, "error PCF_VALUE", "PCF_MISSING: field cf.total at 2:55: required value is none: no pcf"},
		{`example a: { } => expect(cf.ok, ==, true);`, "cf.ok == …", "PCF_MISSING: field cf.total at 2:55: required value is none: no pcf"},
		{`property a: cases(3) seed(9) => forall x: Dec(1). implies(true, 1.0 / 0.0 > x);`, "postcondition holds", "DIVISION_BY_ZERO: field a at 1:69: division by zero"},
		{`property a: cases(3) seed(9) => forall x: Dec(1). implies(1.0 / 0.0 > x, true);`, "precondition evaluates", "DIVISION_BY_ZERO: field a at 1:63: division by zero"},
		{`property a: cases(30) seed(9) => forall x: Int. implies(x != 0, x > 0);`, "postcondition holds", "postcondition is false"},
	} {
		rep, err := RunTests(t.Context(), mustProgram(t, testRules), tc.src, 1)
		require.NoError(t, err, tc.src)
		require.NotNil(t, rep.FirstFailure, tc.src)
		require.Equal(t, tc.expected, rep.FirstFailure.Expected, tc.src)
		require.Equal(t, tc.actual, rep.FirstFailure.Actual, tc.src)
	}
}

func TestRunTestsSeededDeterminism(t *testing.T) {
	t.Parallel()
	prog := mustProgram(t, testRules)
	src := `property p: cases(500) seed(11) => forall x: List(Opt(Dec(3))). implies(len(x) > 3, false);`
	run := func(seed uint64) []byte {
		rep, err := RunTests(t.Context(), prog, src, seed)
		require.NoError(t, err)
		b, err := json.Marshal(rep)
		require.NoError(t, err)
		return b
	}
	a := run(5)
	for range 3 {
		require.Equal(t, a, run(5))
	}
	require.NotEqual(t, a, run(6))
	var rep TestReport
	require.NoError(t, json.Unmarshal(a, &rep))
	require.Equal(t, 500, rep.TotalCases)
	require.Positive(t, rep.Failed)
	require.Positive(t, rep.Passed)
}

func TestCheckTestsErrors(t *testing.T) {
	t.Parallel()
	prog := mustProgram(t, testRules)
	cases := []struct {
		name, src string
		code      errcode.Code
		test      string
		line, col int
	}{
		{"bad keyword", `exemple a: {} => expect(cf.ok, ==, true);`, errcode.RuleParseError, "", 1, 1},
		{"unknown field", `example a: {} => expect(cf.nope, ==, true);`, errcode.RuleTypeError, "a", 1, 25},
		{"type mismatch", `example a: {} => expect(cf.total, ==, 1);`, errcode.RuleTypeError, "a", 1, 35},
		{"bad op", `example a: {} => expect(cf.ok, +, true);`, errcode.RuleParseError, "a", 1, 32},
		{"bad json", `example a: { fact f("pcf", "k") = {"a": }; } => expect(cf.ok, ==, true);`, errcode.RuleParseError, "a", 1, 35},
		{"float json", `example a: { fact f("pcf", "k") = {"a": 1.5}; } => expect(cf.ok, ==, true);`, errcode.RuleParseError, "a", 1, 35},
		{"bad code", `example a: {} => expect_error("bad");`, errcode.RuleTypeError, "a", 1, 31},
		{"dup test", "example a: {} => expect_error(\"ABC\");\nexample a: {} => expect_error(\"ABC\");", errcode.RuleTypeError, "a", 2, 9},
		{"cases zero", `property p: cases(0) seed(1) => forall x: Int. implies(true, true);`, errcode.RuleTypeError, "p", 1, 10},
		{"negative seed", `property p: cases(1) seed(-1) => forall x: Int. implies(true, true);`, errcode.RuleTypeError, "p", 1, 10},
		{"bad range", `property p: cases(1) seed(1) => forall x: Int(5, -5). implies(true, true);`, errcode.RuleTypeError, "p", 1, 43},
		{"not generatable", `property p: cases(1) seed(1) => forall x: Map(Text, Int). implies(true, true);`, errcode.RuleTypeError, "p", 1, 43},
		{"pre not bool", `property p: cases(1) seed(1) => forall x: Int. implies(x, true);`, errcode.RuleTypeError, "p", 1, 56},
		{"post type error", `property p: cases(1) seed(1) => forall x: Int. implies(true, x + "a");`, errcode.RuleTypeError, "p", 1, 64},
		{"missing forall", `property p: cases(1) seed(1) => x: Int. implies(true, true);`, errcode.RuleParseError, "p", 1, 33},
		{"seed not int", `property p: cases(1) seed(x) => forall x: Int. implies(true, true);`, errcode.RuleParseError, "p", 1, 27},
		{"lex error", `example a: {} => expect(cf.ok, ==, #);`, errcode.RuleParseError, "", 1, 36},
		{"missing semicolon", `example a: {} => expect(cf.ok, ==, true)`, errcode.RuleParseError, "a", 1, 41},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := CheckTests(prog, tc.src)
			requireErrorAt(t, err, tc.code, tc.test, tc.line, tc.col)
		})
	}
	_, err := RunTests(t.Context(), prog, "nonsense", 1)
	require.Equal(t, errcode.RuleParseError, errcode.CodeOf(err))
}

func FuzzCheckTests(f *testing.F) {
	f.Add(testSource)
	f.Add(`example a: { fact f("a","b") = [1,{"x":null}]; } => expect(cf.ok, ==, true);`)
	addNestingSeeds(f, true)
	prog, err := Check(testRules)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := CheckTests(prog, src)
		if err != nil {
			if errcode.As(err) == nil {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for _, tc := range s.tests {
			if tc.cases > 50 {
				return // keep fuzz iterations fast
			}
		}
		_, _ = s.Run(t.Context(), 1)
	})
}

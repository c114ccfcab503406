package rules_test

import (
	"context"
	"fmt"

	"github.com/bpc-platform/bpc/core/rules"
)

// pcfRules declare two passport fields: the carbon footprint read from a
// fact, and a compliance result computed from it.
const pcfRules = `
field carbon.check : Record(code: Text, detail: Text, ok: Bool) =
  emitCompliance("PCF_BELOW_100", field("carbon.total") < qty(100, kgCO2e), concat("total ", toText(toDec(field("carbon.total"), 2))));
field carbon.total : Qty(kgCO2e) =
  toQty(requireSome(recordGet(requireSome(getFact("pcf", "total"), "PCF_MISSING", "no PCF fact"), "value"), "PCF_VALUE_MISSING", "no value"), kgCO2e);
`

// Check a rule source once, then evaluate it over a snapshot's facts: fields
// come out in dependency order, each with its value and derivation trace, and
// the compliance results in the order they were emitted.
func Example() {
	prog, err := rules.Check(pcfRules)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(prog.Order())

	res, err := prog.Evaluate(rules.FactSet{
		{FactType: "pcf", FactKey: "total", Payload: []byte(`{"value":"61.20"}`)},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range res.Fields {
		v, _ := f.Value.MarshalCanonical()
		fmt.Println(f.Path, string(v), f.Trace.Type)
	}
	for _, c := range res.Compliance {
		fmt.Println(c.Code, c.OK, c.Detail)
	}

	// Without the fact, requireSome stops the evaluation with its code.
	_, err = prog.Evaluate(nil)
	fmt.Println(err)
	// Output:
	// [carbon.total carbon.check]
	// carbon.total {"unit":"kgCO2e","value":"61.200000"} OP
	// carbon.check {"code":"PCF_BELOW_100","detail":"total 61.20","ok":true} COMPLIANCE_EMIT
	// PCF_BELOW_100 true total 61.20
	// PCF_MISSING: field carbon.total at 5:31: required value is none: no PCF fact
}

// RunTests runs a rule package's examples and properties; a report with no
// failure is what lets a rule package version be published.
func ExampleRunTests() {
	prog, err := rules.Check(pcfRules)
	if err != nil {
		fmt.Println(err)
		return
	}
	tests := `
example declared: { fact f("pcf", "total") = {"value": "61.20"}; } => expect(carbon.total, ==, qty(61.2, kgCO2e));
example missing: { } => expect_error("PCF_MISSING");
property doubling_grows: cases(100) seed(7) => forall x: Dec(2). implies(x > 0.00, x + x > x);
`
	report, err := rules.RunTests(context.Background(), prog, tests, 42)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(report)

	failing := `example wrong: { fact f("pcf", "total") = {"value": "61.20"}; } => expect(carbon.total, ==, qty(61.3, kgCO2e));`
	report, _ = rules.RunTests(context.Background(), prog, failing, 42)
	fmt.Println(report)
	// Output:
	// 102 cases, 102 passed, 0 failed
	// 1 cases, 0 passed, 1 failed; first failure: wrong case 0: expected carbon.total == {"unit":"kgCO2e","value":"61.300000"}, got {"unit":"kgCO2e","value":"61.200000"}
}

// Errors in a source carry the field and the line:col where they were found.
func ExampleErrorLocation() {
	_, err := rules.Check("field a.b : Int = 1;\nfield a.c : Int = field(\"a.b\") + true;\n")
	fmt.Println(err)
	field, pos, ok := rules.ErrorLocation(err)
	fmt.Println(field, pos.Line, pos.Col, ok)
	// Output:
	// RULE_TYPE_ERROR: field a.c at 2:32: operator + cannot combine Int and Bool
	// a.c 2 32 true
}

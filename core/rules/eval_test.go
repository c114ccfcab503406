package rules

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/errcode"
)

var sampleFacts = FactSet{
	{FactType: "pcf", FactKey: "total", Payload: []byte(`{"stages":{"a":"40.10","b":"21.15"},"value":"61.25"}`)},
	{FactType: "bom", FactKey: "cell/2", Payload: []byte(`{"cas":"7439-93-2","mass_g":1250,"recycled":"0.125"}`)},
	{FactType: "bom", FactKey: "cell/1", Payload: []byte(`{"cas":"7440-02-0","mass_g":"3000.5","recycled":"0.2"}`)},
	{FactType: "bom", FactKey: "pack", Payload: []byte(`{"mass_g":500}`)},
	{FactType: "meta", FactKey: "info", Payload: []byte(`{"active":true,"count":3,"made":"2024-05-01","name":"NMC811","note":null}`)},
}

const sampleRules = `
field cf.total : Dec(2) = toDec(requireSome(recordGet(requireSome(getFact("pcf", "total"), "PCF_MISSING", "no pcf"), "value"), "PCF_VALUE", "no value"), 2);
field cf.stages : Dec(2) =
  let p = requireSome(getFact("pcf", "total"), "PCF_MISSING", "no pcf");
  let s = requireSome(recordGet(p, "stages"), "PCF_STAGES", "no stages");
  toDec(requireSome(recordGet(s, "a"), "STAGE_A", "a"), 2) + toDec(requireSome(recordGet(s, "b"), "STAGE_B", "b"), 2);
field cf.check : Record(code: Text, detail: Text, ok: Bool) =
  emitCompliance("CF_STAGES_SUM", field("cf.stages") == field("cf.total"), concat("total ", toText(field("cf.total"))));
field bom.masses : List(Qty(g)) = map(getFactsByPrefix("bom", "cell/"), (c) => toQty(requireSome(recordGet(c, "mass_g"), "NO_MASS", "m"), g));
field bom.total : Qty(kg) = convert(sumQty(field("bom.masses")), kg);
field bom.heavy : Int = len(filter(field("bom.masses"), (m) => m > qty(2000, g)));
field bom.recycled : Dec(3) = sumDec(map(getFactsByPrefix("bom", "cell/"), (c) => toDec(unwrapOr(recordGet(c, "recycled"), c), 3)));
field bom.by_cas : Map(Text, Dec(3)) = toMap(getFactsByPrefix("bom", "cell"), (c) => toText(requireSome(recordGet(c, "cas"), "NO_CAS", "c")), (c) => toDec(requireSome(recordGet(c, "recycled"), "NO_R", "r"), 3));
field bom.li : Opt(Dec(3)) = mapGet(field("bom.by_cas"), "7439-93-2");
field bom.none : Opt(Dec(3)) = mapGet(field("bom.by_cas"), "0000");
field meta.active : Bool = toBool(requireSome(recordGet(requireSome(getFact("meta", "info"), "MMM", "m"), "active"), "MMM", "m"));
field meta.count : Int = toInt(requireSome(recordGet(requireSome(getFact("meta", "info"), "MMM", "m"), "count"), "MMM", "m")) * 2;
field meta.made : Date = toDate(requireSome(recordGet(requireSome(getFact("meta", "info"), "MMM", "m"), "made"), "MMM", "m"));
field meta.note : Bool = isSome(recordGet(requireSome(getFact("meta", "info"), "MMM", "m"), "note"));
field meta.missing : Bool = isSome(getFact("meta", "nope"));
field meta.summary : Record(count: Int, name: Text) = record(name: toText(requireSome(recordGet(requireSome(getFact("meta", "info"), "MMM", "m"), "name"), "MMM", "m")), count: field("meta.count"));
field meta.count_back : Int = recordGet(field("meta.summary"), "count");
field math.third : Dec(4) = 1.0000 / 3.00;
field math.half_even_down : Dec(0) = toDec("2.5", 0);
field math.half_even_up : Dec(0) = toDec("3.5", 0);
field math.neg_half : Dec(0) = toDec("-2.5", 0);
field math.div_tie : Dec(1) = 0.5 / 2.0;
field math.div_neg : Dec(2) = -10.00 / 3.00;
field math.mul : Dec(4) = 1.25 * 1.25;
field math.qty_mul : Qty(kWh) = qty(10, kWh) * 0.3333333;
field math.qty_div : Qty(kWh) = qty(10, kWh) / 3.0;
field math.neg_zero : Dec(2) = -0.00;
field math.int : Int = -(7 - 10) * 3;
field math.g_to_kg : Qty(kg) = convert(qty(1234.5678915, g), kg);
field math.kg_to_g : Qty(g) = convert(qty(1.5, kg), g);
field math.qty_dec : Dec(2) = toDec(qty(2.345, kg), 2);
field math.cmp : Bool = 1.5 == 1.50 && 2.0 != 2.01 && date("2024-01-01") < date("2024-01-02") && "a" < "b" && some(1) == some(1) && none != some(1);
field math.ord : Bool = 3 >= 3 && 3 <= 3 && 2.00 > 1.9 && qty(1, g) <= qty(1, g) && !(true == false);
field math.text : Text = concat(toText(1), toText(true), toText(date("2024-01-01")), toText(1.50), toText("x"));
field math.if : Dec(1) = if (false || field("math.int") > 5) then 1.0 else 2.0;
field math.assert : Int = assert(field("math.int") == 9, "MATH_OK", "nine"); field("math.int") + 1;
field math.short : Bool = false && (1.0 / 0.0 > 0.0);
`

// evaluate checks src and evaluates it against facts, both without error.
func evaluate(t testing.TB, src string, facts FactSet) *Result {
	t.Helper()
	r, err := mustProgram(t, src).Evaluate(facts)
	require.NoError(t, err)
	return r
}

func TestEvaluateGoldenValues(t *testing.T) {
	t.Parallel()
	r := evaluate(t, sampleRules, sampleFacts)
	want := map[string]string{
		"cf.total":            `"61.25"`,
		"cf.stages":           `"61.25"`,
		"cf.check":            `{"code":"CF_STAGES_SUM","detail":"total 61.25","ok":true}`,
		"bom.masses":          `[{"unit":"g","value":"3000.500000"},{"unit":"g","value":"1250.000000"}]`,
		"bom.total":           `{"unit":"kg","value":"4.250500"}`,
		"bom.heavy":           `1`,
		"bom.recycled":        `"0.325"`,
		"bom.by_cas":          `{"7439-93-2":"0.125","7440-02-0":"0.200"}`,
		"bom.li":              `"0.125"`,
		"bom.none":            `null`,
		"meta.active":         `true`,
		"meta.count":          `6`,
		"meta.made":           `"2024-05-01"`,
		"meta.note":           `false`,
		"meta.missing":        `false`,
		"meta.summary":        `{"count":6,"name":"NMC811"}`,
		"meta.count_back":     `6`,
		"math.third":          `"0.3333"`,
		"math.half_even_down": `"2"`,
		"math.half_even_up":   `"4"`,
		"math.neg_half":       `"-2"`,
		"math.div_tie":        `"0.2"`,
		"math.div_neg":        `"-3.33"`,
		"math.mul":            `"1.5625"`,
		"math.qty_mul":        `{"unit":"kWh","value":"3.333333"}`,
		"math.qty_div":        `{"unit":"kWh","value":"3.333333"}`,
		"math.neg_zero":       `"0.00"`,
		"math.int":            `9`,
		"math.g_to_kg":        `{"unit":"kg","value":"1.234568"}`,
		"math.kg_to_g":        `{"unit":"g","value":"1500.000000"}`,
		"math.qty_dec":        `"2.34"`,
		"math.cmp":            `true`,
		"math.ord":            `true`,
		"math.text":           `1true2024-01-011.50x`,
		"math.if":             `"1.0"`,
		"math.assert":         `10`,
		"math.short":          `false`,
	}
	want["math.text"] = `"1true2024-01-011.50x"`
	require.Len(t, r.Fields, len(want))
	for path, w := range want {
		v, ok := r.Value(path)
		require.True(t, ok, path)
		b, err := v.MarshalCanonical()
		require.NoError(t, err)
		require.Equal(t, w, string(b), path)
		require.Equal(t, string(viaEncodingJSON(t, v)), string(b), path)
	}
	require.Equal(t, []ComplianceResult{{Field: "cf.check", Code: "CF_STAGES_SUM", OK: true, Detail: "total 61.25"}}, r.Compliance)
	_, ok := r.Value("nope")
	require.False(t, ok)
}

func TestEvaluateTraceGolden(t *testing.T) {
	t.Parallel()
	src := `
field a.mass : Qty(kg) = toQty(requireSome(recordGet(requireSome(getFact("bom", "pack"), "NO_PACK", "no pack"), "mass_g"), "NO_MASS", "no mass"), kg);
field a.ok : Int = assert(field("a.mass") > qty(1, kg), "MASS_POSITIVE", "mass"); let x = 2; x * 3;
field a.n : Int = len(getFactsByPrefix("bom", "cell/"));
field a.c : Record(code: Text, detail: Text, ok: Bool) = emitCompliance("C1", !true, "d");
`
	r := evaluate(t, src, sampleFacts)
	want := map[string]string{
		"a.mass": `{"children":[{"children":[{"children":[{"children":[{"children":[{"children":[],"data":{"value":"bom"},"type":"CONST"},{"children":[],"data":{"value":"pack"},"type":"CONST"}],"data":{"fact_key":"pack","fact_type":"bom","fn":"getFact","found":true,"payload_hash":"85437fe94eadc4a9df72a6841fca32bb1acd0e11e845cf13a2610176cb287d79"},"type":"FACT_GET"}],"data":{"code":"NO_PACK","message":"no pack","op":"requireSome","value":{"mass_g":500}},"type":"OP"}],"data":{"name":"mass_g","op":"recordGet","value":500},"type":"OP"}],"data":{"code":"NO_MASS","message":"no mass","op":"requireSome","value":500},"type":"OP"}],"data":{"op":"toQty","value":{"unit":"kg","value":"500.000000"}},"type":"OP"}`,
		"a.ok":   `{"children":[{"children":[{"children":[],"data":{"field":"a.mass","value":{"unit":"kg","value":"500.000000"}},"type":"FIELD_REF"},{"children":[{"children":[],"data":{"value":1},"type":"CONST"}],"data":{"op":"qty","value":{"unit":"kg","value":"1.000000"}},"type":"OP"}],"data":{"op":">","value":true},"type":"OP"},{"children":[{"children":[],"data":{"value":2},"type":"CONST"},{"children":[{"children":[],"data":{"value":3},"type":"CONST"}],"data":{"op":"*","value":6},"type":"OP"}],"data":{"name":"x","op":"let","value":6},"type":"OP"}],"data":{"code":"MASS_POSITIVE","ok":true},"type":"ASSERT"}`,
		"a.n":    `{"children":[{"children":[{"children":[],"data":{"value":"bom"},"type":"CONST"},{"children":[],"data":{"value":"cell/"},"type":"CONST"}],"data":{"fact_type":"bom","facts":[{"fact_key":"cell/1","payload_hash":"11d25a03c4b298f0eb0d25889808d5451fb81bfd8ebebc4f47cc2d3edb72f2c9"},{"fact_key":"cell/2","payload_hash":"ec6545fd424f4b2f70673a9aa4fef63668578d8941ec7770e82c4e2d93d1920f"}],"fn":"getFactsByPrefix","key_prefix":"cell/"},"type":"FACT_GET"}],"data":{"op":"len","value":2},"type":"OP"}`,
		"a.c":    `{"children":[{"children":[],"data":{"value":"C1"},"type":"CONST"},{"children":[{"children":[],"data":{"value":true},"type":"CONST"}],"data":{"op":"not","value":false},"type":"OP"},{"children":[],"data":{"value":"d"},"type":"CONST"}],"data":{"code":"C1","detail":"d","ok":false},"type":"COMPLIANCE_EMIT"}`,
	}
	for _, f := range r.Fields {
		b, err := f.Trace.MarshalCanonical()
		require.NoError(t, err)
		require.Equal(t, want[f.Path], string(b), f.Path)
	}
}

func TestEvaluateIsDeterministic(t *testing.T) {
	t.Parallel()
	encode := func(facts FactSet) []byte {
		r := evaluate(t, sampleRules, facts)
		var buf bytes.Buffer
		for _, f := range r.Fields {
			v, err := f.Value.MarshalCanonical()
			require.NoError(t, err)
			tr, err := f.Trace.MarshalCanonical()
			require.NoError(t, err)
			buf.WriteString(f.Path + "=" + string(v) + ";" + string(tr) + "\n")
		}
		return buf.Bytes()
	}
	first := encode(sampleFacts)
	reversed := make(FactSet, len(sampleFacts))
	for i, f := range sampleFacts {
		reversed[len(sampleFacts)-1-i] = f
	}
	for range 5 {
		require.Equal(t, first, encode(sampleFacts))
		require.Equal(t, first, encode(reversed))
	}
}

func TestEvaluateRuntimeErrors(t *testing.T) {
	t.Parallel()
	cases := []errorCase{
		{"division by zero", "field ok : Int = 1;\nfield a.b : Dec(2) = 1.00 / (1.00 - 1.00);", errcode.DivisionByZero, "a.b", 2, 27},
		{"qty division by zero", "field a : Qty(kg) = qty(1, kg) / 0.0;", errcode.DivisionByZero, "a", 1, 32},
		{"assert fails", "field a : Int = assert(1 > 2, \"ONE_GT_TWO\", \"never\"); 1;", errcode.Code("ONE_GT_TWO"), "a", 1, 17},
		{"require none", "field a : Text = toText(requireSome(getFact(\"x\", \"y\"), \"FACT_MISSING\", \"m\"));", errcode.Code("FACT_MISSING"), "a", 1, 25},
		{"int overflow add", "field a : Int = 9223372036854775807 + 1;", errcode.Validation, "a", 1, 37},
		{"int overflow sub", "field a : Int = -9223372036854775807 - 2;", errcode.Validation, "a", 1, 38},
		{"int overflow mul", "field a : Int = 9223372036854775807 * 2;", errcode.Validation, "a", 1, 37},
		{"int overflow neg", "field a : Int = -(-9223372036854775807 - 1);", errcode.Validation, "a", 1, 17},
		{"decimal overflow", "field a : Dec(1) = 999999999999999999999999999999.0 + 1.0;", errcode.Validation, "a", 1, 53},
		{"bad decimal text", "field a : Dec(2) = toDec(\"1e5\", 2);", errcode.Validation, "a", 1, 20},
		{"bad decimal fact", "field a : Dec(2) = toDec(requireSome(getFact(\"meta\", \"info\"), \"MMM\", \"m\"), 2);", errcode.Validation, "a", 1, 20},
		{"bad decimal fact text", "field a : Dec(2) = toDec(requireSome(recordGet(requireSome(getFact(\"meta\", \"info\"), \"MMM\", \"m\"), \"name\"), \"MMM\", \"m\"), 2);", errcode.Validation, "a", 1, 20},
		{"recordGet non object", "field a : Bool = isSome(recordGet(requireSome(recordGet(requireSome(getFact(\"meta\", \"info\"), \"MMM\", \"m\"), \"name\"), \"MMM\", \"m\"), \"x\"));", errcode.Validation, "a", 1, 25},
		{"toText non string", "field a : Text = toText(requireSome(getFact(\"meta\", \"info\"), \"MMM\", \"m\"));", errcode.Validation, "a", 1, 18},
		{"toInt non int", "field a : Int = toInt(requireSome(getFact(\"meta\", \"info\"), \"MMM\", \"m\"));", errcode.Validation, "a", 1, 17},
		{"toInt bad text", "field a : Int = toInt(\"1.5\");", errcode.Validation, "a", 1, 17},
		{"toBool non bool", "field a : Bool = toBool(requireSome(getFact(\"meta\", \"info\"), \"MMM\", \"m\"));", errcode.Validation, "a", 1, 18},
		{"toDate non string", "field a : Date = toDate(requireSome(getFact(\"meta\", \"info\"), \"MMM\", \"m\"));", errcode.Validation, "a", 1, 18},
		{"toDate bad", "field a : Date = toDate(\"2024-13-01\");", errcode.Validation, "a", 1, 18},
		{"toQty out of range", "field a : Qty(g) = toQty(\"999999999999999999999999999999\", g) * 10.0;", errcode.Validation, "a", 1, 63},
		{"toMap duplicate", "field a : Map(Text, Int) = toMap(list(1, 2), (x) => \"k\", (x) => x);", errcode.Validation, "a", 1, 28},
		{"error in lambda", "field a : List(Dec(1)) = map(list(1.0, 0.0), (x) => 1.0 / x);", errcode.DivisionByZero, "a", 1, 57},
		{"error in fold", "field a : Dec(1) = fold(list(0.0), 1.0, (acc, x) => acc / x);", errcode.DivisionByZero, "a", 1, 57},
		{"error in toMap value", "field a : Map(Text, Dec(1)) = toMap(list(0.0), (x) => \"k\", (x) => 1.0 / x);", errcode.DivisionByZero, "a", 1, 71},
		{"error in toMap key", "field a : Map(Text, Int) = toMap(list(0.0), (x) => toText(1.0 / x), (x) => 1);", errcode.DivisionByZero, "a", 1, 63},
		{"error in filter", "field a : List(Dec(1)) = filter(list(0.0), (x) => 1.0 / x > x);", errcode.DivisionByZero, "a", 1, 55},
	}
	requireErrorCases(t, cases, func(t *testing.T, src string) error {
		p, err := Check(src)
		require.NoError(t, err)
		_, err = p.Evaluate(sampleFacts)
		return err
	})
}

func TestEvaluateRejectsBadFactSets(t *testing.T) {
	t.Parallel()
	p, err := Check("field a : Int = 1;")
	require.NoError(t, err)
	_, err = p.Evaluate(FactSet{{"t", "k", []byte(`{}`)}, {"t", "k", []byte(`{}`)}})
	require.Equal(t, errcode.Validation, errcode.CodeOf(err))
	_, err = p.Evaluate(FactSet{{"t", "k", []byte(`{"b":1, "a":2}`)}})
	require.Equal(t, errcode.Validation, errcode.CodeOf(err))
	_, err = p.Evaluate(FactSet{{"t", "k", []byte(`{"a":1.5}`)}})
	require.Equal(t, errcode.Validation, errcode.CodeOf(err))
}

func TestEvaluateBudgets(t *testing.T) {
	t.Parallel()
	p, err := Check(`field a : Text = fold(list(1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1), "ab", (acc, x) => concat(acc, acc));`)
	require.NoError(t, err)
	_, err = p.Evaluate(nil)
	require.Equal(t, errcode.Validation, errcode.CodeOf(err))
	require.Contains(t, err.Error(), "concat")
	l := "list(1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30)"
	p, err = Check(`field a : Int = fold(` + l + `, 0, (a, x) => fold(` + l + `, a, (b, y) => fold(` + l + `, b, (c, z) => fold(` + l + `, c, (d, w) => fold(` + l + `, d, (e, v) => e + 1)))));`)
	require.NoError(t, err)
	_, err = p.Evaluate(nil)
	require.Equal(t, errcode.Validation, errcode.CodeOf(err))
	require.Contains(t, err.Error(), "steps")
}

func TestDivRoundHalfEven(t *testing.T) {
	t.Parallel()
	cases := []struct{ src, want string }{
		{"0.5 / 2.0", `"0.2"`},   // 0.25 → 0.2 (tie, even)
		{"0.7 / 2.0", `"0.4"`},   // 0.35 → 0.4 (tie, even)
		{"-0.5 / 2.0", `"-0.2"`}, // -0.25 → -0.2
		{"-0.7 / 2.0", `"-0.4"`}, // -0.35 → -0.4
		{"1.0 / -3.0", `"-0.3"`},
		{"2.0 / 3.0", `"0.7"`},
		{"-0.1 / 3.0", `"0.0"`},
	}
	for _, tc := range cases {
		p, err := Check("field a : Dec(1) = " + tc.src + ";")
		require.NoError(t, err, tc.src)
		r, err := p.Evaluate(nil)
		require.NoError(t, err, tc.src)
		require.Equal(t, tc.want, r.Fields[0].Value.String(), tc.src)
	}
}

func TestValueEncodingEdgeCases(t *testing.T) {
	t.Parallel()
	require.Equal(t, `"x"`, textVal("x").String())
	require.Equal(t, `<invalid>`, Value{Kind: KindFact, Fact: make(chan int)}.String())
	require.Equal(t, `null`, Value{}.String())
	require.True(t, valueEqual(listVal([]Value{intVal(1)}), listVal([]Value{intVal(1)})))
	require.False(t, valueEqual(listVal([]Value{intVal(1)}), listVal([]Value{intVal(2)})))
	require.False(t, valueEqual(listVal(nil), listVal([]Value{intVal(2)})))
	require.False(t, valueEqual(intVal(1), textVal("1")))
	require.Equal(t, 0, compareValues(boolVal(true), boolVal(true)))
	require.Equal(t, -1, compareValues(boolVal(false), boolVal(true)))
	require.Equal(t, 1, compareValues(boolVal(true), boolVal(false)))
	require.Equal(t, 0, compareValues(listVal(nil), listVal(nil)))
}

// viaEncodingJSON encodes v the general way, independent of
// Value.AppendCanonical: its encoding/json tree, then canonjson.Canonicalize.
func viaEncodingJSON(t *testing.T, v Value) []byte {
	t.Helper()
	raw, err := json.Marshal(v.jsonValue())
	require.NoError(t, err)
	out, err := canonjson.Canonicalize(raw)
	require.NoError(t, err)
	return out
}

// Every value of the 40-field bench program (records, lists, maps, Qty, Dec,
// Opt) encodes directly to the bytes of the general path.
func TestAppendCanonicalMatchesTheGeneralPath(t *testing.T) {
	t.Parallel()
	src, facts := benchProgram()
	r := evaluate(t, src, facts)
	values := []Value{
		textVal("tab\t \"q\" é\u0001"), dateVal("2024-02-29"), noneVal(), someVal(intVal(-3)),
		{Kind: KindMap, Keys: []string{"a", "é"}, Elems: []Value{listVal([]Value{boolVal(true)}), textVal("x")}},
		factVal(map[string]any{"b": []any{json.Number("1"), nil, "s"}, "a": true}),
	}
	for _, f := range r.Fields {
		values = append(values, f.Value)
	}
	for _, v := range values {
		b, err := v.MarshalCanonical()
		require.NoError(t, err)
		require.Equal(t, string(viaEncodingJSON(t, v)), string(b))
	}
	_, err := textVal("\xff").MarshalCanonical()
	require.ErrorIs(t, err, canonjson.ErrInvalidUTF8)
}

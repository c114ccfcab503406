package rules

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// benchProgram builds a 40-field program over 10 material facts: per-material
// masses, recycled shares and carbon, plus totals, compliance and asserts.
func benchProgram() (string, FactSet) {
	var b strings.Builder
	var facts FactSet
	for i := range 10 {
		facts = append(facts, Fact{FactType: "bom", FactKey: fmt.Sprintf("mat/%02d", i),
			Payload: []byte(fmt.Sprintf(`{"cas":"7440-%02d-0","mass_g":"%d.250","recycled":"0.%02d"}`, i, 1000+i*37, 10+i))})
	}
	facts = append(facts, Fact{FactType: "pcf", FactKey: "total", Payload: []byte(`{"a":"40.10","b":"21.15","total":"61.25"}`)})
	for i := range 10 {
		fmt.Fprintf(&b, "field mat.m%02d.mass : Qty(g) = toQty(requireSome(recordGet(requireSome(getFact(\"bom\", \"mat/%02d\"), \"NO_MAT\", \"m\"), \"mass_g\"), \"NO_MASS\", \"m\"), g);\n", i, i)
		fmt.Fprintf(&b, "field mat.m%02d.recycled : Qty(g) = field(\"mat.m%02d.mass\") * toDec(requireSome(recordGet(requireSome(getFact(\"bom\", \"mat/%02d\"), \"NO_MAT\", \"m\"), \"recycled\"), \"NO_REC\", \"r\"), 2);\n", i, i, i)
		fmt.Fprintf(&b, "field mat.m%02d.kg : Qty(kg) = convert(field(\"mat.m%02d.mass\"), kg);\n", i, i)
	}
	b.WriteString(`
field total.mass : Qty(g) = sumQty(map(getFactsByPrefix("bom", "mat/"), (m) => toQty(requireSome(recordGet(m, "mass_g"), "NO_MASS", "m"), g)));
field total.mass_kg : Qty(kg) = convert(field("total.mass"), kg);
field total.recycled : Qty(g) = field("mat.m00.recycled") + field("mat.m01.recycled") + field("mat.m02.recycled") + field("mat.m03.recycled") + field("mat.m04.recycled");
field total.share : Dec(4) = toDec(field("total.recycled"), 4) / toDec(field("total.mass"), 4);
field pcf.total : Dec(2) = toDec(requireSome(recordGet(requireSome(getFact("pcf", "total"), "NO_PCF", "p"), "total"), "NO_TOTAL", "t"), 2);
field pcf.sum : Dec(2) = let p = requireSome(getFact("pcf", "total"), "NO_PCF", "p"); toDec(unwrapOr(recordGet(p, "a"), p), 2) + toDec(unwrapOr(recordGet(p, "b"), p), 2);
field pcf.check : Record(code: Text, detail: Text, ok: Bool) = assert(field("pcf.sum") == field("pcf.total"), "PCF_SUM", "stages sum to total"); emitCompliance("PCF_SUM", true, "ok");
field circ.heavy : Int = len(filter(getFactsByPrefix("bom", "mat/"), (m) => toDec(requireSome(recordGet(m, "mass_g"), "NO_MASS", "m"), 0) > 1200.0));
field circ.ok : Record(code: Text, detail: Text, ok: Bool) = emitCompliance("RECYCLED_MIN", field("total.share") >= 0.0500, concat("share ", toText(field("total.share"))));
field circ.count : Int = fold(getFactsByPrefix("bom", "mat/"), 0, (acc, m) => if (isSome(recordGet(m, "cas"))) then acc + 1 else acc);
`)
	return b.String(), facts
}

func TestBenchProgramEvaluates(t *testing.T) {
	t.Parallel()
	src, facts := benchProgram()
	p, err := Check(src)
	require.NoError(t, err)
	require.Len(t, p.Fields, 40)
	r, err := p.Evaluate(facts)
	require.NoError(t, err)
	v, _ := r.Value("total.mass_kg")
	require.Equal(t, `{"unit":"kg","value":"11.667500"}`, v.String())
	v, _ = r.Value("circ.count")
	require.Equal(t, `10`, v.String())
}

func BenchmarkCheck(b *testing.B) {
	src, _ := benchProgram()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Check(src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEvaluate(b *testing.B) {
	src, facts := benchProgram()
	p, err := Check(src)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := p.Evaluate(facts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRunTests500(b *testing.B) {
	p, err := Check(testRules)
	if err != nil {
		b.Fatal(err)
	}
	src := `
example ok: { fact f("pcf", "total") = {"value": "61.20"}; } => expect(cf.total, ==, 61.20);
property a: cases(499) seed(7) => forall x: Dec(2). implies(x > 0.00, x + x > x);
`
	s, err := CheckTests(p, src)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if r, err := s.Run(b.Context(), 1); err != nil || r.Failed != 0 || r.TotalCases != 500 {
			b.Fatal(r, err)
		}
	}
}

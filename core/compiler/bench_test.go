package compiler

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/rules"
)

// benchInput40 is a 40-field program over ten materials and a PCF, the size
// of a realistic passport rule package.
func benchInput40() Input {
	var b strings.Builder
	var facts []rules.Fact
	for i := range 10 {
		facts = append(facts, rules.Fact{FactType: "bom", FactKey: fmt.Sprintf("mat/%02d", i),
			Payload: fmt.Appendf(nil, `{"cas":"7440-%02d-0","mass_g":"%d.250","recycled":"0.%02d"}`, i, 1000+i*37, 10+i)})
		fmt.Fprintf(&b, "field mat.m%02d.mass : Qty(g) = toQty(requireSome(recordGet(requireSome(getFact(\"bom\", \"mat/%02d\"), \"NO_MAT\", \"m\"), \"mass_g\"), \"NO_MASS\", \"m\"), g);\n", i, i)
		fmt.Fprintf(&b, "field mat.m%02d.recycled : Qty(g) = field(\"mat.m%02d.mass\") * toDec(requireSome(recordGet(requireSome(getFact(\"bom\", \"mat/%02d\"), \"NO_MAT\", \"m\"), \"recycled\"), \"NO_REC\", \"r\"), 2);\n", i, i, i)
		fmt.Fprintf(&b, "field mat.m%02d.kg : Qty(kg) = convert(field(\"mat.m%02d.mass\"), kg);\n", i, i)
	}
	facts = append(facts, rules.Fact{FactType: "pcf", FactKey: "total", Payload: []byte(`{"a":"40.10","b":"21.15","total":"61.25"}`)})
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
	in := baseInput()
	in.DSLSource = b.String()
	in.Facts = facts
	return in
}

func TestBenchInput40Compiles(t *testing.T) {
	t.Parallel()
	out, err := CompilePassport(benchInput40())
	require.NoError(t, err)
	require.Len(t, out.Compliance, 2)
	require.NoError(t, VerifyProof(out.Proof))
}

// BenchmarkCompile compiles the pcf_asserts fixture (14 fields, 11 facts);
// the goal is at most 2 ms per compile.
func BenchmarkCompile(b *testing.B) {
	in := loadFixture(b, "pcf_asserts")
	for b.Loop() {
		if _, err := CompilePassport(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompile40 compiles a 40-field program over 11 facts.
func BenchmarkCompile40(b *testing.B) {
	in := benchInput40()
	for b.Loop() {
		if _, err := CompilePassport(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyProof verifies the proof of the pcf_asserts fixture.
func BenchmarkVerifyProof(b *testing.B) {
	out, err := CompilePassport(loadFixture(b, "pcf_asserts"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(out.Proof)))
	for b.Loop() {
		if err := VerifyProof(out.Proof); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompileSampleCold compiles the NMC811 sample with the program
// cache emptied before every compile: the first compile against a rule
// package version (BenchmarkCompileSample in examples/nmc811 is the warm case).
func BenchmarkCompileSampleCold(b *testing.B) {
	in := loadFixture(b, "nmc811")
	b.ReportAllocs()
	for b.Loop() {
		programs.mu.Lock()
		programs.byDigest, programs.order = map[string]*rules.Program{}, nil
		programs.mu.Unlock()
		if _, err := CompilePassport(in); err != nil {
			b.Fatal(err)
		}
	}
}

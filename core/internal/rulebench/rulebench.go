// Package rulebench is the 40-field rule program the rules and compiler
// benchmarks and their tests share: ten materials (per-material masses,
// recycled shares and converted masses) and a PCF, with totals, compliance
// and asserts, the size of a realistic passport rule package. It does not
// import the rules package, so the rules package's own tests can use it.
package rulebench

import (
	"fmt"
	"strings"
)

// Fact is one fact of the program's input, by its rules.Fact members.
type Fact struct {
	FactType, FactKey string
	Payload           []byte
}

// Program returns the program's source and the facts it reads: ten BOM
// materials and a PCF total.
func Program() (src string, facts []Fact) {
	var b strings.Builder
	for i := range 10 {
		facts = append(facts, Fact{FactType: "bom", FactKey: fmt.Sprintf("mat/%02d", i),
			Payload: fmt.Appendf(nil, `{"cas":"7440-%02d-0","mass_g":"%d.250","recycled":"0.%02d"}`, i, 1000+i*37, 10+i)})
		fmt.Fprintf(&b, "field mat.m%02d.mass : Qty(g) = toQty(requireSome(recordGet(requireSome(getFact(\"bom\", \"mat/%02d\"), \"NO_MAT\", \"m\"), \"mass_g\"), \"NO_MASS\", \"m\"), g);\n", i, i)
		fmt.Fprintf(&b, "field mat.m%02d.recycled : Qty(g) = field(\"mat.m%02d.mass\") * toDec(requireSome(recordGet(requireSome(getFact(\"bom\", \"mat/%02d\"), \"NO_MAT\", \"m\"), \"recycled\"), \"NO_REC\", \"r\"), 2);\n", i, i, i)
		fmt.Fprintf(&b, "field mat.m%02d.kg : Qty(kg) = convert(field(\"mat.m%02d.mass\"), kg);\n", i, i)
	}
	facts = append(facts, Fact{FactType: "pcf", FactKey: "total", Payload: []byte(`{"a":"40.10","b":"21.15","total":"61.25"}`)})
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

package compiler

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/proof"
	"github.com/bpc-platform/bpc/core/rules"
)

// propertyRules reads stage values, materials and an optional warranty; every
// fact set randomFacts generates evaluates without error.
const propertyRules = `
field pcf.total : Dec(2) = toDec(requireSome(recordGet(requireSome(getFact("pcf", "total"), "PCF_MISSING", "no pcf"), "value"), "PCF_VALUE", "no value"), 2);
field pcf.stages : Dec(2) = sumDec(map(getFactsByPrefix("pcf", "stage/"), (s) => toDec(requireSome(recordGet(s, "value"), "PCF_STAGE", "no value"), 2)));
field pcf.sum_ok : Record(code: Text, detail: Text, ok: Bool) = emitCompliance("PCF_STAGE_SUM", field("pcf.stages") == field("pcf.total"), concat("stages sum to ", toText(field("pcf.stages"))));
field bom.mass : Qty(kg) = convert(sumQty(map(getFactsByPrefix("bom", "mat/"), (m) => toQty(requireSome(recordGet(m, "mass_g"), "BOM_MASS", "no mass"), g))), kg);
field bom.count : Int = len(getFactsByPrefix("bom", "mat/"));
field bom.heavy : Int = fold(getFactsByPrefix("bom", "mat/"), 0, (n, m) => if (toDec(requireSome(recordGet(m, "mass_g"), "BOM_MASS", "no mass"), 3) > 500.000) then n + 1 else n);
field warranty.years : Opt(Int) = let w = getFact("warranty", "main"); if (isSome(w)) then some(toInt(requireSome(recordGet(requireSome(w, "WARRANTY_MISSING", "no warranty"), "years"), "W_YEARS", "no years"))) else none;
field warranty.years_or_zero : Int = unwrapOr(field("warranty.years"), 0);
`

// randomFacts returns a valid fact set: a PCF total (equal to the stage sum
// or not), 0–5 stages, 0–6 materials with decimal-string masses and maybe a
// warranty, all values as decimal strings in canonical payloads.
func randomFacts(r *rand.Rand) (facts []rules.Fact, materials int) {
	stages := r.IntN(6)
	sum := 0
	for i := range stages {
		cents := r.IntN(100_000)
		sum += cents
		facts = append(facts, fact("pcf", fmt.Sprintf("stage/%d", i), map[string]any{"value": centsText(cents)}))
	}
	total := sum
	if r.IntN(4) == 0 {
		total = r.IntN(1_000_000)
	}
	facts = append(facts, fact("pcf", "total", map[string]any{"value": centsText(total), "unit": "kgCO2e/kWh"}))
	materials = r.IntN(7)
	for i := range materials {
		facts = append(facts, fact("bom", fmt.Sprintf("mat/%02d", i), map[string]any{
			"mass_g": fmt.Sprintf("%d.%03d", r.IntN(100_000), r.IntN(1000)),
			"cas":    fmt.Sprintf("%d-%02d-%d", 1000+r.IntN(9000), r.IntN(100), r.IntN(10)),
		}))
	}
	if r.IntN(2) == 0 {
		facts = append(facts, fact("warranty", "main", map[string]any{"years": r.IntN(15)}))
	}
	r.Shuffle(len(facts), func(i, j int) { facts[i], facts[j] = facts[j], facts[i] })
	return facts, materials
}

func centsText(c int) string { return fmt.Sprintf("%d.%02d", c/100, c%100) }

// fact builds a fact with a canonical payload (encoding/json sorts map keys
// and these payloads need no escaping).
func fact(typ, key string, payload map[string]any) rules.Fact {
	b, err := json.Marshal(payload)
	if err != nil {
		panic(err)
	}
	return rules.Fact{FactType: typ, FactKey: key, Payload: b}
}

func TestPropertyDeterministicAndTamperEvident(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(20261122, 3))
	const sets = 200
	const tampersPerSet = 10
	for n := range sets {
		facts, materials := randomFacts(r)
		in := baseInput()
		in.DSLSource = propertyRules
		in.Facts = facts
		first, err := CompilePassport(in)
		require.NoError(t, err, "set %d", n)

		in.Facts = slices.Clone(facts)
		r.Shuffle(len(in.Facts), func(i, j int) { in.Facts[i], in.Facts[j] = in.Facts[j], in.Facts[i] })
		second, err := CompilePassport(in)
		require.NoError(t, err, "set %d", n)
		require.Equal(t, first.Payload, second.Payload, "set %d", n)
		require.Equal(t, first.Proof, second.Proof, "set %d", n)
		require.Equal(t, first.Receipt, second.Receipt, "set %d", n)

		var doc struct {
			Fields struct {
				Bom struct {
					Count int `json:"count"`
				} `json:"bom"`
			} `json:"fields"`
		}
		require.NoError(t, json.Unmarshal(first.Payload, &doc))
		require.Equal(t, materials, doc.Fields.Bom.Count, "set %d", n)

		p, err := proof.Verify(first.Proof)
		require.NoError(t, err, "set %d", n)
		require.Equal(t, first.ProofRootHash, p.RootHash)
		require.NoError(t, VerifyProof(first.Proof), "set %d", n)

		tampered := make([]byte, len(first.Proof))
		for range tampersPerSet {
			copy(tampered, first.Proof)
			pos := r.IntN(len(tampered))
			tampered[pos] ^= byte(1 + r.IntN(255))
			require.Error(t, VerifyProof(tampered), "set %d: byte %d changed", n, pos)
		}
	}
}

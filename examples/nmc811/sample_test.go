package nmc811_test

import (
	"bytes"
	"encoding/json"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/facts"
	"github.com/bpc-platform/bpc/core/proof"
	"github.com/bpc-platform/bpc/core/rules"
	"github.com/bpc-platform/bpc/examples/nmc811"
)

func evaluate(t testing.TB) (*rules.Program, *rules.Result) {
	t.Helper()
	prog, err := rules.Check(nmc811.Rules())
	if err != nil {
		t.Fatalf("Check(rules.bpc): %v", err)
	}
	facts, err := nmc811.Facts()
	if err != nil {
		t.Fatalf("Facts: %v", err)
	}
	res, err := prog.Evaluate(facts)
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	return prog, res
}

func TestEvaluateSample(t *testing.T) {
	prog, res := evaluate(t)
	if n := len(prog.Fields); n != 48 {
		t.Errorf("rules.bpc declares %d fields, want 48", n)
	}
	want := map[string]string{
		"general.identifier":                `"EVB-NMC811-75"`,
		"general.model":                     `"Voltaris EV Pack 75"`,
		"general.manufacturer":              `{"address":"Industriestrasse 12, 38448 Wolfsburg, DE","eori":"DE123456789012345","name":"Voltaris Battery Systems GmbH"}`,
		"general.manufacturing_place":       `"Salzgitter, DE"`,
		"general.manufacturing_date":        `"2026-03-14"`,
		"general.category":                  `"EV"`,
		"general.chemistry":                 `"NMC811"`,
		"general.mass":                      `{"unit":"kg","value":"452.000000"}`,
		"general.rated_capacity":            `{"unit":"kWh","value":"75.000000"}`,
		"general.voltage":                   `{"max":"462.0","min":"300.0","nominal":"400.0"}`,
		"general.cells":                     `288`,
		"carbon.stages":                     `[{"intensity":{"unit":"gCO2e_per_kWh","value":"38900.000000"},"stage":"raw_material_acquisition"},{"intensity":{"unit":"gCO2e_per_kWh","value":"19400.000000"},"stage":"main_production"},{"intensity":{"unit":"gCO2e_per_kWh","value":"1200.000000"},"stage":"distribution"},{"intensity":{"unit":"gCO2e_per_kWh","value":"1800.000000"},"stage":"end_of_life_recycling"}]`,
		"carbon.intensity":                  `{"unit":"gCO2e_per_kWh","value":"61300.000000"}`,
		"carbon.intensity_kg_per_kwh":       `"61.3"`,
		"carbon.stage_shares":               `{"distribution":{"unit":"pct","value":"1.957586"},"end_of_life_recycling":{"unit":"pct","value":"2.936378"},"main_production":{"unit":"pct","value":"31.647635"},"raw_material_acquisition":{"unit":"pct","value":"63.458401"}}`,
		"carbon.functional_unit":            `{"unit":"kWh","value":"75.000000"}`,
		"carbon.pack_footprint":             `{"unit":"kgCO2e","value":"4597.500000"}`,
		"carbon.performance_class":          `"C"`,
		"carbon.verification":               `{"body":"TÜV Nord CERT GmbH","certificate":"PCF-2026-0414-7781","valid_until":"2029-04-14"}`,
		"carbon.verified":                   `true`,
		"due_diligence.verification":        `{"body":"RCS Global Group","date":"2026-02-20","report":"DD-2026-0091","result":"conformant"}`,
		"due_diligence.verified":            `true`,
		"due_diligence.risk_profile":        `{"high":1,"low":1,"medium":2}`,
		"due_diligence.high_risk_materials": `["cobalt"]`,
		"due_diligence.high_risk_mitigated": `true`,
		"materials.total_mass":              `{"unit":"kg","value":"452.000000"}`,
		"materials.critical_raw_materials":  `["Lithium (in cathode active material)","Manganese (in cathode active material)","Nickel (in cathode active material)","Cobalt (in cathode active material)","Graphite (anode)"]`,
		"materials.hazardous_by_cas":        `{"21324-40-3":"Acute Tox. 3; Skin Corr. 1A; STOT RE 1","616-38-6":"Flam. Liq. 2","7440-48-4":"Carc. 1B; Repr. 1B; Skin Sens. 1"}`,
		"materials.hazardous_declared":      `true`,
		"circularity.targets":               `{"cobalt":{"unit":"pct","value":"16.000000"},"lithium":{"unit":"pct","value":"6.000000"},"nickel":{"unit":"pct","value":"6.000000"}}`,
		"circularity.cobalt_share":          `{"unit":"pct","value":"16.500000"}`,
		"circularity.lithium_share":         `{"unit":"pct","value":"6.200000"}`,
		"circularity.nickel_share":          `{"unit":"pct","value":"4.000000"}`,
		"circularity.cobalt_target_met":     `true`,
		"circularity.lithium_target_met":    `true`,
		"circularity.nickel_target_met":     `false`,
		"circularity.recycled_mass":         `{"unit":"kg","value":"129.754850"}`,
		"circularity.recycled_share":        `{"unit":"pct","value":"28.706825"}`,
		"performance.rated_energy":          `{"unit":"Wh","value":"75000.000000"}`,
		"performance.voltage_span":          `"162.0"`,
		"performance.energy_per_mass":       `"165.93"`,
		"performance.energy_per_cell":       `{"unit":"Wh","value":"260.416667"}`,
		"performance.rated_charge_ah":       `"187.5"`,
	}
	for path, w := range want {
		v, ok := res.Value(path)
		if !ok {
			t.Errorf("field %s missing", path)
			continue
		}
		got, err := v.MarshalCanonical()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if string(got) != w {
			t.Errorf("%s = %s, want %s", path, got, w)
		}
	}
	// the materials list: 13 BOM lines, ordered by fact key
	if v, _ := res.Value("materials.list"); len(v.Elems) != 13 {
		t.Errorf("materials.list has %d lines, want 13", len(v.Elems))
	}

	type emitted struct {
		field, code, detail string
		ok                  bool
	}
	wantC := []emitted{
		{"due_diligence.verified", "DD_THIRD_PARTY_VERIFIED", "third-party verification result: conformant", true},
		{"carbon.verified", "PCF_VERIFIED", "third-party verified, certificate PCF-2026-0414-7781 valid until 2029-04-14", true},
		{"circularity.cobalt_target_met", "ART8_RECYCLED_COBALT", "recycled cobalt 16.5 % (minimum 16 %)", true},
		{"circularity.lithium_target_met", "ART8_RECYCLED_LITHIUM", "recycled lithium 6.2 % (minimum 6 %)", true},
		{"circularity.nickel_target_met", "ART8_RECYCLED_NICKEL", "recycled nickel 4.0 % (minimum 6 %)", false},
	}
	if len(res.Compliance) != len(wantC) {
		t.Fatalf("compliance = %+v, want %d results", res.Compliance, len(wantC))
	}
	for i, c := range res.Compliance {
		if got := (emitted{c.Field, c.Code, c.Detail, c.OK}); got != wantC[i] {
			t.Errorf("compliance[%d] = %+v, want %+v", i, got, wantC[i])
		}
	}
}

// The sample must stay well inside the compiler's proof limit (SPEC §6: 262144 bytes).
func TestSampleProofSize(t *testing.T) {
	_, res := evaluate(t)
	fields := make([]proof.Field, len(res.Fields))
	for i, f := range res.Fields {
		fields[i] = proof.Field{Path: f.Path, Root: toStep(f.Trace)}
	}
	_, raw, err := proof.Build(fields)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > 200_000 {
		t.Errorf("proof of the sample is %d bytes; keep it below 200000 (limit 262144)", len(raw))
	}
}

func toStep(n *rules.Node) *proof.Step {
	s := &proof.Step{Type: proof.NodeType(n.Type), Data: n.Data}
	for _, c := range n.Children {
		s.Children = append(s.Children, toStep(c))
	}
	return s
}

func TestRunTestsSuite(t *testing.T) {
	prog, _ := evaluate(t)
	for _, seed := range []uint64{0, 1, 42} {
		rep, err := rules.RunTests(t.Context(), prog, nmc811.Tests(), seed)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if rep.Failed != 0 || rep.Passed != rep.TotalCases || rep.FirstFailure != nil {
			t.Errorf("seed %d: %s", seed, rep)
		}
		if rep.TotalCases < 500 {
			t.Errorf("seed %d: %d cases, want at least 500", seed, rep.TotalCases)
		}
		again, err := rules.RunTests(t.Context(), prog, nmc811.Tests(), seed)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := canonjson.Marshal(rep)
		b, _ := canonjson.Marshal(again)
		if !bytes.Equal(a, b) {
			t.Errorf("seed %d: reports differ: %s vs %s", seed, a, b)
		}
	}
}

// The report counts every example once and every property cases(N) times.
func TestSuiteCounts(t *testing.T) {
	src := nmc811.Tests()
	examples := regexp.MustCompile(`(?m)^example `).FindAllStringIndex(src, -1)
	props := regexp.MustCompile(`(?m)^property \w+: cases\((\d+)\)`).FindAllStringSubmatch(src, -1)
	cases := len(examples)
	for _, p := range props {
		n, _ := new(big.Int).SetString(p[1], 10)
		cases += int(n.Int64())
	}
	prog, _ := evaluate(t)
	rep, err := rules.RunTests(t.Context(), prog, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rep.TotalCases != cases || len(examples) != 46 || len(props) != 18 {
		t.Errorf("report counts %d cases; the source has %d examples and %d properties (%d cases)", rep.TotalCases, len(examples), len(props), cases)
	}
}

func TestFactsAreCanonicalAndSorted(t *testing.T) {
	raw, err := nmc811.Document(nmc811.DocFacts)
	if err != nil {
		t.Fatal(err)
	}
	var in []struct {
		FactType string          `json:"fact_type"`
		FactKey  string          `json:"fact_key"`
		Payload  json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		t.Fatal(err)
	}
	if len(in) != 23 {
		t.Errorf("facts.json has %d facts, want 23", len(in))
	}
	for i, f := range in {
		if !canonjson.Valid(f.Payload) {
			t.Errorf("payload of (%s, %s) is not canonical JSON as written", f.FactType, f.FactKey)
		}
		if i > 0 {
			p := in[i-1]
			if p.FactType > f.FactType || (p.FactType == f.FactType && p.FactKey >= f.FactKey) {
				t.Errorf("facts.json not sorted/unique at (%s, %s)", f.FactType, f.FactKey)
			}
		}
	}
	facts, err := nmc811.Facts()
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range facts {
		if !bytes.Equal(f.Payload, in[i].Payload) || f.FactType != in[i].FactType || f.FactKey != in[i].FactKey {
			t.Errorf("Facts()[%d] differs from facts.json", i)
		}
	}
}

// mapDocuments is the PARSE_FACTS mapping documented in README.md.
func mapDocuments(t *testing.T) []rules.Fact {
	t.Helper()
	doc := func(name string) map[string]any {
		b, err := nmc811.Document(name)
		if err != nil {
			t.Fatal(err)
		}
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return m
	}
	var out []rules.Fact
	add := func(typ, key string, payload any) {
		p, err := canonjson.Marshal(payload)
		if err != nil {
			t.Fatalf("(%s, %s): %v", typ, key, err)
		}
		out = append(out, rules.Fact{FactType: typ, FactKey: key, Payload: p})
	}
	without := func(m map[string]any, keys ...string) map[string]any {
		c := map[string]any{}
		for k, v := range m {
			c[k] = v
		}
		for _, k := range keys {
			delete(c, k)
		}
		return c
	}
	bom, pcf, dd := doc(nmc811.DocBOM), doc(nmc811.DocPCF), doc(nmc811.DocDueDiligence)
	battery := bom["battery"].(map[string]any)
	add("BOM", "battery:"+battery["sku"].(string), battery)
	for _, m := range bom["materials"].([]any) {
		m := m.(map[string]any)
		id := m["cas"].(string)
		if id == "" {
			id = slug(m["name"].(string))
		}
		add("BOM_MATERIAL", "material:"+id, m)
	}
	for _, h := range bom["hazardous_substances"].([]any) {
		h := h.(map[string]any)
		add("BOM_HAZARDOUS", "hazardous:"+h["cas"].(string), h)
	}
	add("PCF", "pcf:"+pcf["battery_sku"].(string), without(pcf, "document_type", "schema_version"))
	add("DUE_DILIGENCE", "dd:"+dd["battery_sku"].(string), without(dd, "document_type", "schema_version", "raw_materials"))
	for _, r := range dd["raw_materials"].([]any) {
		r := r.(map[string]any)
		add("DD_MATERIAL", "dd_material:"+slug(r["material"].(string)), r)
	}
	return out
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

// slug: lower case, cut at " (", runs of other characters become "-".
func slug(s string) string {
	s = strings.ToLower(s)
	if i := strings.Index(s, " ("); i >= 0 {
		s = s[:i]
	}
	return strings.Trim(nonSlug.ReplaceAllString(s, "-"), "-")
}

func TestFactsMatchDocuments(t *testing.T) {
	mapped := mapDocuments(t)
	facts, err := nmc811.Facts()
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string][]byte{}
	for _, f := range mapped {
		k := f.FactType + "\x00" + f.FactKey
		if _, dup := byKey[k]; dup {
			t.Errorf("mapping yields (%s, %s) twice", f.FactType, f.FactKey)
		}
		byKey[k] = f.Payload
	}
	if len(facts) != len(mapped) {
		t.Errorf("facts.json has %d facts, the documents map to %d", len(facts), len(mapped))
	}
	for _, f := range facts {
		want, ok := byKey[f.FactType+"\x00"+f.FactKey]
		if !ok {
			t.Errorf("fact (%s, %s) does not come from the documents", f.FactType, f.FactKey)
			continue
		}
		if !bytes.Equal(f.Payload, want) {
			t.Errorf("fact (%s, %s):\n got %s\nwant %s", f.FactType, f.FactKey, f.Payload, want)
		}
	}

	// The documents' own arithmetic, checked independently of the rules.
	dec := func(s string) *big.Rat {
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			t.Fatalf("not a decimal: %q", s)
		}
		return r
	}
	var bom struct {
		Battery struct {
			MassKg string `json:"mass_kg"`
		} `json:"battery"`
		Materials []struct {
			MassG string `json:"mass_g"`
		} `json:"materials"`
	}
	var pcf struct {
		Total  string            `json:"total_kgco2e_per_kwh"`
		Stages map[string]string `json:"stages_kgco2e_per_kwh"`
	}
	for name, v := range map[string]any{nmc811.DocBOM: &bom, nmc811.DocPCF: &pcf} {
		b, _ := nmc811.Document(name)
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	sum := new(big.Rat)
	for _, m := range bom.Materials {
		sum.Add(sum, dec(m.MassG))
	}
	if sum.Cmp(new(big.Rat).Mul(dec(bom.Battery.MassKg), big.NewRat(1000, 1))) != 0 {
		t.Errorf("materials sum to %s g, battery mass is %s kg", sum.FloatString(3), bom.Battery.MassKg)
	}
	stages := new(big.Rat)
	for _, s := range pcf.Stages {
		stages.Add(stages, dec(s))
	}
	if stages.Cmp(dec(pcf.Total)) != 0 || len(pcf.Stages) != 4 {
		t.Errorf("PCF stages sum to %s, total is %s", stages.FloatString(3), pcf.Total)
	}
}

// The example sample_full in tests.bpc runs on exactly the facts of facts.json.
func TestSampleExampleUsesFacts(t *testing.T) {
	src := nmc811.Tests()
	start := strings.Index(src, "example sample_full: {")
	end := strings.Index(src[start:], "} =>")
	if start < 0 || end < 0 {
		t.Fatal("example sample_full not found")
	}
	re := regexp.MustCompile(`(?m)^  fact f\("([A-Z_]+)", "([^"]+)"\) = (.*);$`)
	var got []rules.Fact
	for _, m := range re.FindAllStringSubmatch(src[start:start+end], -1) {
		p, err := canonjson.Canonicalize([]byte(m[3]))
		if err != nil {
			t.Fatalf("(%s, %s): %v", m[1], m[2], err)
		}
		got = append(got, rules.Fact{FactType: m[1], FactKey: m[2], Payload: p})
	}
	facts, err := nmc811.Facts()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(facts) {
		t.Fatalf("sample_full has %d facts, facts.json %d", len(got), len(facts))
	}
	for i := range facts {
		if got[i].FactType != facts[i].FactType || got[i].FactKey != facts[i].FactKey || !bytes.Equal(got[i].Payload, facts[i].Payload) {
			t.Errorf("sample_full fact %d (%s, %s) differs from facts.json", i, got[i].FactType, got[i].FactKey)
		}
	}
}

func TestDocument(t *testing.T) {
	for _, n := range []string{nmc811.DocBOM, nmc811.DocPCF, nmc811.DocDueDiligence, nmc811.DocFacts} {
		b, err := nmc811.Document(n)
		if err != nil || !json.Valid(b) {
			t.Errorf("Document(%s): %v", n, err)
		}
	}
	if _, err := nmc811.Document("rules.bpc"); err == nil {
		t.Error("Document(rules.bpc) should fail")
	}
	if !strings.Contains(nmc811.Rules(), "field general.identifier") || !strings.Contains(nmc811.Tests(), "example sample_full") {
		t.Error("embedded sources are empty")
	}
}

func BenchmarkRunTests(b *testing.B) {
	prog, _ := evaluate(b)
	suite, err := rules.CheckTests(prog, nmc811.Tests())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if rep, err := suite.Run(b.Context(), 0); err != nil || rep.Failed != 0 {
			b.Fatal(rep, err)
		}
	}
}

func BenchmarkEvaluate(b *testing.B) {
	prog, _ := evaluate(b)
	facts, _ := nmc811.Facts()
	for b.Loop() {
		if _, err := prog.Evaluate(facts); err != nil {
			b.Fatal(err)
		}
	}
}

// core/facts, the parser PARSE_FACTS runs, maps the three documents to
// exactly the facts of facts.json.
func TestParserReproducesFactsJSON(t *testing.T) {
	var parsed []rules.Fact
	for kind, name := range map[string]string{facts.KindBOM: nmc811.DocBOM, facts.KindPCF: nmc811.DocPCF, facts.KindDueDiligence: nmc811.DocDueDiligence} {
		doc, err := nmc811.Document(name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := facts.Parse(kind, doc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, f := range got {
			parsed = append(parsed, rules.Fact{FactType: f.FactType, FactKey: f.FactKey, Payload: f.Payload})
		}
	}
	slices.SortFunc(parsed, func(a, b rules.Fact) int {
		return strings.Compare(a.FactType+"\x00"+a.FactKey, b.FactType+"\x00"+b.FactKey)
	})
	want, err := nmc811.Facts()
	if err != nil {
		t.Fatal(err)
	}
	if len(parsed) != len(want) {
		t.Fatalf("parser yields %d facts, facts.json has %d", len(parsed), len(want))
	}
	for i := range want {
		if parsed[i].FactType != want[i].FactType || parsed[i].FactKey != want[i].FactKey || !bytes.Equal(parsed[i].Payload, want[i].Payload) {
			t.Errorf("fact %d: parsed (%s, %s) %s, facts.json (%s, %s) %s", i,
				parsed[i].FactType, parsed[i].FactKey, parsed[i].Payload, want[i].FactType, want[i].FactKey, want[i].Payload)
		}
	}
}

// Package nmc811 is the realistic sample of the passport pipeline: the source
// documents of a 75 kWh NMC811 EV battery pack, the facts PARSE_FACTS
// extracts from them (facts.json), a BPC-RULES-1 rule package (rules.bpc) and
// its test suite (tests.bpc). See README.md for the fact mapping.
package nmc811

import (
	"embed"
	"encoding/json"
	"fmt"

	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/rules"
)

//go:embed rules.bpc
var rulesSrc string

//go:embed tests.bpc
var testsSrc string

//go:embed facts.json bom.json pcf.json due_diligence.json
var files embed.FS

// Document names accepted by Document.
const (
	DocBOM          = "bom.json"
	DocPCF          = "pcf.json"
	DocDueDiligence = "due_diligence.json"
	DocFacts        = "facts.json"
	BatterySKU      = "EVB-NMC811-75"
)

// Rules returns the rule package source (rules.bpc).
func Rules() string { return rulesSrc }

// Tests returns the tests source (tests.bpc).
func Tests() string { return testsSrc }

// Document returns the bytes of one of the embedded documents: "bom.json",
// "pcf.json", "due_diligence.json" or "facts.json".
func Document(name string) ([]byte, error) {
	switch name {
	case DocBOM, DocPCF, DocDueDiligence, DocFacts:
		return files.ReadFile(name)
	}
	return nil, fmt.Errorf("nmc811: unknown document %q", name)
}

// factJSON is one entry of facts.json.
type factJSON struct {
	FactType string          `json:"fact_type"`
	FactKey  string          `json:"fact_key"`
	Payload  json.RawMessage `json:"payload"`
}

// Facts returns the facts of facts.json in file order (sorted by type, then
// key), each payload canonicalized (BPC-CJSON-1).
func Facts() ([]rules.Fact, error) {
	raw, err := files.ReadFile(DocFacts)
	if err != nil {
		return nil, err
	}
	var in []factJSON
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("nmc811: facts.json: %w", err)
	}
	out := make([]rules.Fact, 0, len(in))
	for _, f := range in {
		p, err := canonjson.Canonicalize(f.Payload)
		if err != nil {
			return nil, fmt.Errorf("nmc811: facts.json: fact (%s, %s): %w", f.FactType, f.FactKey, err)
		}
		out = append(out, rules.Fact{FactType: f.FactType, FactKey: f.FactKey, Payload: p})
	}
	return out, nil
}

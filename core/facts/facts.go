// Package facts maps source documents (BOM, PCF, due diligence; JSON) to the
// facts PARSE_FACTS stores: {fact_type, fact_key, payload} with the payload
// in BPC-CJSON-1 canonical bytes and its SHA-256. The mapping is documented in
// examples/nmc811/README.md ("Fact mapping"): payloads are copied verbatim
// from the document — no value is converted, renamed or rounded — so a fact
// is exactly what the supplier declared.
//
// The package is pure: the same document always yields the same facts, in
// the same order (sorted by type, then key).
package facts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
)

// Document kinds.
const (
	KindBOM          = "BOM"
	KindPCF          = "PCF"
	KindDueDiligence = "DUE_DILIGENCE"
)

// Kinds lists the document kinds, sorted.
var Kinds = []string{KindBOM, KindDueDiligence, KindPCF}

// SchemaVersion is the document schema version this parser reads; facts
// carry it as their schema_version.
const SchemaVersion = 1

// MaxDocumentBytes bounds a document's size.
const MaxDocumentBytes = 4 << 20

// MaxFacts bounds the facts one document may map to.
const MaxFacts = 10_000

// Fact is one parsed fact.
type Fact struct {
	FactType      string
	FactKey       string
	SchemaVersion int
	// Payload is the BPC-CJSON-1 canonical payload; PayloadHash its SHA-256 hex.
	Payload     []byte
	PayloadHash string
}

// IsKind reports whether kind is a document kind.
func IsKind(kind string) bool { return slices.Contains(Kinds, kind) }

// CheckSize refuses a document larger than MaxDocumentBytes.
func CheckSize(content []byte) error {
	if len(content) > MaxDocumentBytes {
		return errcode.Invalid("content", "document is %d bytes, limit is %d", len(content), MaxDocumentBytes)
	}
	return nil
}

// Parse maps a document of kind to its facts. Errors are VALIDATION_ERRORs
// naming the offending member as a path (e.g. "materials[3].cas"), and
// UNSUPPORTED_FORMAT for a kind this parser does not know.
func Parse(kind string, content []byte) ([]Fact, error) {
	if !IsKind(kind) {
		return nil, errcode.New(errcode.UnsupportedFormat, "document kind %q is not one of %s", kind, strings.Join(Kinds, ", "))
	}
	if err := CheckSize(content); err != nil {
		return nil, err
	}
	// Canonicalize first: it rejects what BPC-CJSON-1 cannot carry (floats,
	// duplicate keys, invalid UTF-8) with a path to the culprit.
	canonical, err := canonjson.Canonicalize(content)
	if err != nil {
		return nil, errcode.InvalidWrap("content", err, "document is not valid BPC JSON: %s", strings.TrimPrefix(err.Error(), "canonjson: "))
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(canonical))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil || doc == nil {
		return nil, errcode.Invalid("content", "document must be a JSON object")
	}
	p := &parser{doc: doc}
	if err := p.header(kind); err != nil {
		return nil, err
	}
	switch kind {
	case KindBOM:
		err = p.bom()
	case KindPCF:
		err = p.pcf()
	case KindDueDiligence:
		err = p.dueDiligence()
	}
	if err != nil {
		return nil, err
	}
	slices.SortFunc(p.out, func(a, b Fact) int {
		if c := strings.Compare(a.FactType, b.FactType); c != 0 {
			return c
		}
		return strings.Compare(a.FactKey, b.FactKey)
	})
	return p.out, nil
}

type parser struct {
	doc  map[string]any
	out  []Fact
	seen map[string]string // type\x00key → path of the element that produced it
}

func (p *parser) header(kind string) error {
	if t, ok := p.doc["document_type"]; !ok {
		return errcode.Invalid("document_type", "is required (%s)", kind)
	} else if s, _ := t.(string); s != kind {
		return errcode.Invalid("document_type", "is %v, but the document was created as %s", t, kind)
	}
	v, ok := p.doc["schema_version"].(json.Number)
	if !ok || v.String() != fmt.Sprint(SchemaVersion) {
		return errcode.Invalid("schema_version", "must be %d", SchemaVersion)
	}
	return nil
}

func (p *parser) add(path, typ, key string, payload any) error {
	if len(p.out) >= MaxFacts {
		return errcode.Invalid(path, "document maps to more than %d facts", MaxFacts)
	}
	if len(key) > 300 {
		return errcode.Invalid(path, "fact key %q is longer than 300 bytes", key)
	}
	if p.seen == nil {
		p.seen = map[string]string{}
	}
	id := typ + "\x00" + key
	if first, dup := p.seen[id]; dup {
		return errcode.Invalid(path, "maps to fact (%s, %s) again (first from %s)", typ, key, first)
	}
	p.seen[id] = path
	b, err := canonjson.Marshal(payload)
	if err != nil {
		return errcode.InvalidWrap(path, err, "%s", err.Error())
	}
	p.out = append(p.out, Fact{FactType: typ, FactKey: key, SchemaVersion: SchemaVersion, Payload: b, PayloadHash: hash.SHA256Hex(b)})
	return nil
}

// each calls item with the path ("name[i]") and value of every element of
// the document's member name, which must be an array of objects; when
// optional, an absent member has no elements.
func (p *parser) each(name string, optional bool, item func(path string, m map[string]any) error) error {
	if _, ok := p.doc[name]; optional && !ok {
		return nil
	}
	items, err := array(p.doc, name, name)
	if err != nil {
		return err
	}
	for i, m := range items {
		if err := item(fmt.Sprintf("%s[%d]", name, i), m); err != nil {
			return err
		}
	}
	return nil
}

// object returns member name of m as an object.
func object(m map[string]any, name, path string) (map[string]any, error) {
	v, ok := m[name].(map[string]any)
	if !ok {
		return nil, errcode.Invalid(path, "must be an object")
	}
	return v, nil
}

// array returns member name of m as an array of objects.
func array(m map[string]any, name, path string) ([]map[string]any, error) {
	v, ok := m[name].([]any)
	if !ok {
		return nil, errcode.Invalid(path, "must be an array")
	}
	out := make([]map[string]any, len(v))
	for i, e := range v {
		o, ok := e.(map[string]any)
		if !ok {
			return nil, errcode.Invalid(fmt.Sprintf("%s[%d]", path, i), "must be an object")
		}
		out[i] = o
	}
	return out, nil
}

// text returns member name of m as a string; required ones must be non-empty.
func text(m map[string]any, name, path string, required bool) (string, error) {
	v, present := m[name]
	s, ok := v.(string)
	switch {
	case !present && !required:
		return "", nil
	case !ok:
		return "", errcode.Invalid(path, "must be a string")
	case required && strings.TrimSpace(s) == "":
		return "", errcode.Invalid(path, "must not be empty")
	}
	return s, nil
}

// without returns a copy of m without keys.
func without(m map[string]any, keys ...string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if !slices.Contains(keys, k) {
			out[k] = v
		}
	}
	return out
}

// slugOf returns the Slug of the required text member name of m, the element
// at path, which must have letters or digits to key a material by.
func slugOf(m map[string]any, name, path string) (string, error) {
	path += "." + name
	s, err := text(m, name, path, true)
	if err != nil {
		return "", err
	}
	if s = Slug(s); s == "" {
		return "", errcode.Invalid(path, "has no letters or digits to key the material by")
	}
	return s, nil
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

// Slug lower-cases s, cuts it at the first " (", turns every run of
// characters other than a-z0-9 into "-" and trims "-" at both ends:
// "Electronics (BMS, wiring)" → "electronics".
func Slug(s string) string {
	s = strings.ToLower(s)
	if i := strings.Index(s, " ("); i >= 0 {
		s = s[:i]
	}
	return strings.Trim(nonSlug.ReplaceAllString(s, "-"), "-")
}

// bom: BOM battery:<sku> (the battery object), BOM_MATERIAL material:<cas or
// slug(name)> per material, BOM_HAZARDOUS hazardous:<cas> per substance.
func (p *parser) bom() error {
	battery, err := object(p.doc, "battery", "battery")
	if err != nil {
		return err
	}
	sku, err := text(battery, "sku", "battery.sku", true)
	if err != nil {
		return err
	}
	if err := p.add("battery", "BOM", "battery:"+sku, battery); err != nil {
		return err
	}
	err = p.each("materials", false, func(path string, m map[string]any) error {
		id, err := text(m, "cas", path+".cas", false)
		if err != nil {
			return err
		}
		if id == "" {
			if id, err = slugOf(m, "name", path); err != nil {
				return err
			}
		}
		return p.add(path, "BOM_MATERIAL", "material:"+id, m)
	})
	if err != nil {
		return err
	}
	return p.each("hazardous_substances", true, func(path string, h map[string]any) error {
		cas, err := text(h, "cas", path+".cas", true)
		if err != nil {
			return err
		}
		return p.add(path, "BOM_HAZARDOUS", "hazardous:"+cas, h)
	})
}

// pcf: PCF pcf:<battery_sku>, the document without its header.
func (p *parser) pcf() error {
	sku, err := text(p.doc, "battery_sku", "battery_sku", true)
	if err != nil {
		return err
	}
	return p.add("battery_sku", "PCF", "pcf:"+sku, without(p.doc, "document_type", "schema_version"))
}

// dueDiligence: DUE_DILIGENCE dd:<battery_sku> (the document without its
// header and raw materials) and DD_MATERIAL dd_material:<slug(material)> per
// raw material.
func (p *parser) dueDiligence() error {
	sku, err := text(p.doc, "battery_sku", "battery_sku", true)
	if err != nil {
		return err
	}
	if err := p.add("battery_sku", "DUE_DILIGENCE", "dd:"+sku, without(p.doc, "document_type", "schema_version", "raw_materials")); err != nil {
		return err
	}
	return p.each("raw_materials", true, func(path string, m map[string]any) error {
		key, err := slugOf(m, "material", path)
		if err != nil {
			return err
		}
		return p.add(path, "DD_MATERIAL", "dd_material:"+key, m)
	})
}

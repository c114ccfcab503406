// Package payloadview lays out a compiled passport payload for a person to
// read: its field groups as labelled rows and its compliance results. The
// public verification page and the PDF export show the same rows, in the
// same order, from the same layout.
package payloadview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// View is a payload laid out: Sections in key order ("general" first when
// a rule package has it), the compliance results as compiled, and how many
// rows were left out to stay within a row limit.
type View struct {
	Sections   []Section
	Compliance []Compliance
	// Omitted counts the rows of the sections left out.
	Omitted int
}

// Section is one field group of the payload.
type Section struct {
	Title string
	Rows  []Row
}

// Row is one field: a label made of the path's keys and its value as text.
type Row struct{ Label, Value string }

// Compliance is one emitted compliance result.
type Compliance struct {
	Code   string `json:"code"`
	Field  string `json:"field"`
	Detail string `json:"detail"`
	OK     bool   `json:"ok"`
}

// Layout reads a payload ({fields: {group: ...}, compliance: [...]}) and
// lays out at most maxRows rows: a section that would pass the limit is
// left out whole and counted in Omitted, so that an unusually wide payload
// does not grow a page without end. A payload that is not a JSON object is
// an error.
func Layout(payload []byte, maxRows int) (View, error) {
	var p struct {
		Fields     map[string]any `json:"fields"`
		Compliance []Compliance   `json:"compliance"`
	}
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	if err := d.Decode(&p); err != nil {
		return View{}, fmt.Errorf("error reading the payload: %w", err)
	}
	v := View{Compliance: p.Compliance}
	n := 0
	groups := sortedKeys(p.Fields)
	// "general" (identity, maker, model) leads when a rule package has it.
	if i := slices.Index(groups, "general"); i > 0 {
		groups = append(append([]string{"general"}, groups[:i]...), groups[i+1:]...)
	}
	for _, group := range groups {
		s := Section{Title: Label(group)}
		flatten(&s.Rows, "", p.Fields[group], 0)
		if n+len(s.Rows) > maxRows {
			v.Omitted += len(s.Rows)
			continue
		}
		n += len(s.Rows)
		v.Sections = append(v.Sections, s)
	}
	return v, nil
}

// flatten appends the rows of v under prefix: a {unit, value} quantity is
// one row, an object's members are rows of their own (to depth 3), a list
// of plain values is one row and a list of objects is counted.
func flatten(rows *[]Row, prefix string, v any, depth int) {
	switch x := v.(type) {
	case map[string]any:
		if q, ok := quantity(x); ok {
			*rows = append(*rows, Row{prefix, q})
			return
		}
		if depth >= 3 {
			*rows = append(*rows, Row{prefix, fmt.Sprintf("%d fields", len(x))})
			return
		}
		for _, k := range sortedKeys(x) {
			flatten(rows, join(prefix, Label(k)), x[k], depth+1)
		}
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := scalar(e)
			if !ok {
				*rows = append(*rows, Row{prefix, fmt.Sprintf("%d entries", len(x))})
				return
			}
			parts = append(parts, s)
		}
		*rows = append(*rows, Row{prefix, strings.Join(parts, ", ")})
	default:
		s, _ := scalar(x)
		*rows = append(*rows, Row{prefix, s})
	}
}

func quantity(m map[string]any) (string, bool) {
	if len(m) != 2 {
		return "", false
	}
	value, ok1 := scalar(m["value"])
	unit, ok2 := m["unit"].(string)
	if !ok1 || !ok2 {
		return "", false
	}
	return Decimal(value) + " " + Unit(unit), true
}

// Decimal writes a decimal as a person reads it: without the trailing
// zeros of its fixed scale ("452.000000" → "452", "4.50" → "4.5"). It works
// on the text (no floating point: the digits shown are the payload's);
// anything but a plain decimal is returned as it is.
func Decimal(s string) string {
	digits := strings.TrimPrefix(s, "-")
	whole, frac, ok := strings.Cut(digits, ".")
	if !ok || whole == "" || frac == "" || strings.Trim(whole, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" {
		return s
	}
	frac = strings.TrimRight(frac, "0")
	out := whole
	if frac != "" {
		out += "." + frac
	}
	if strings.HasPrefix(s, "-") && strings.Trim(out, "0.") != "" {
		out = "-" + out
	}
	return out
}

// Unit writes a payload's unit as a person reads it: "pct" as "%", "_per_"
// as "/" ("gCO2e_per_kWh" → "gCO2e/kWh").
func Unit(u string) string {
	if u == "pct" {
		return "%"
	}
	return strings.ReplaceAll(u, "_per_", "/")
}

func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return Decimal(x.String()), true
	case bool:
		if x {
			return "yes", true
		}
		return "no", true
	case nil:
		return "—", true
	}
	return "", false
}

func join(prefix, s string) string {
	if prefix == "" {
		return s
	}
	return prefix + " › " + s
}

// Label turns a payload key into words: "rated_capacity" → "Rated
// capacity"; abbreviations and units are written as they are spelt
// ("eori" → "EORI", "rated_charge_ah" → "Rated charge Ah").
func Label(key string) string {
	words := strings.Split(key, "_")
	for i, w := range words {
		if spelt, ok := spelling[strings.ToLower(w)]; ok {
			words[i] = spelt
		}
	}
	r := []rune(strings.Join(words, " "))
	if len(r) > 0 {
		r[0] = unicode.ToUpper(r[0])
	}
	return string(r)
}

// spelling is how the abbreviations and units a battery passport's keys
// use are written.
var spelling = map[string]string{
	"ah": "Ah", "wh": "Wh", "kwh": "kWh", "mwh": "MWh", "kg": "kg", "co2e": "CO2e", "pcf": "PCF",
	"eori": "EORI", "vat": "VAT", "id": "ID", "sku": "SKU", "url": "URL", "eu": "EU", "iso": "ISO",
	"soh": "SoH", "soc": "SoC", "nmc": "NMC", "lfp": "LFP", "bms": "BMS", "qr": "QR",
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

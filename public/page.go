package public

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"slices"
	"strings"
	"unicode"

	"github.com/bpc-platform/bpc/core/verify"
)

//go:embed page.html.tmpl
var pageSource string

var pageTemplate = template.Must(template.New("page").Parse(pageSource))

// maxRows bounds the field rows of a page; a payload's size is bounded by
// BPC_PAYLOAD_MAX_BYTES, and the page of an unusually wide one says how
// many it left out rather than growing without end.
const maxRows = 300

// page is what the template renders: a version (with, for a scanned QR,
// whether the QR matched), or a problem.
type page struct {
	Title      string
	Version    *VerifiedVersion
	QR         *QRVerification
	Sections   []section
	Omitted    int
	Compliance []compliance
	Checks     []verify.Check
	Problem    string
	// QRInput is the scanned string a form shows again.
	QRInput string
}

// Verified is what the banner says.
func (p page) Verified() bool {
	if p.Version == nil {
		return false
	}
	if p.QR != nil {
		return p.QR.QRMatches && p.QR.Verification.Verified
	}
	return p.Version.Verification.Verified
}

type section struct {
	Title string
	Rows  []row
}

type row struct{ Label, Value string }

type compliance struct {
	Code   string `json:"code"`
	Field  string `json:"field"`
	Detail string `json:"detail"`
	OK     bool   `json:"ok"`
}

// versionPage lays out v: the payload's field groups in key order, its
// compliance results, and the verification checks of ver.
func versionPage(v VerifiedVersion, qrc *QRVerification) page {
	p := page{Title: v.Product.Name, Version: &v, QR: qrc, Checks: v.Verification.Checks}
	var payload struct {
		Fields     map[string]any `json:"fields"`
		Compliance []compliance   `json:"compliance"`
	}
	d := json.NewDecoder(bytes.NewReader(v.Payload))
	d.UseNumber()
	if err := d.Decode(&payload); err != nil {
		// The payload failed to verify too; the page says so already.
		p.Problem = "The passport's payload is not readable."
		return p
	}
	p.Compliance = payload.Compliance
	n := 0
	groups := sortedKeys(payload.Fields)
	// "general" (identity, maker, model) leads when a rule package has it.
	if i := slices.Index(groups, "general"); i > 0 {
		groups = append(append([]string{"general"}, groups[:i]...), groups[i+1:]...)
	}
	for _, group := range groups {
		s := section{Title: label(group)}
		flatten(&s.Rows, "", payload.Fields[group], 0)
		if n+len(s.Rows) > maxRows {
			p.Omitted += len(s.Rows)
			continue
		}
		n += len(s.Rows)
		p.Sections = append(p.Sections, s)
	}
	return p
}

// flatten appends the rows of v under prefix: a {unit, value} quantity is
// one row, an object's members are rows of their own (to depth 3), a list
// of plain values is one row and a list of objects is counted.
func flatten(rows *[]row, prefix string, v any, depth int) {
	switch x := v.(type) {
	case map[string]any:
		if q, ok := quantity(x); ok {
			*rows = append(*rows, row{prefix, q})
			return
		}
		if depth >= 3 {
			*rows = append(*rows, row{prefix, fmt.Sprintf("%d fields", len(x))})
			return
		}
		for _, k := range sortedKeys(x) {
			flatten(rows, join(prefix, label(k)), x[k], depth+1)
		}
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := scalar(e)
			if !ok {
				*rows = append(*rows, row{prefix, fmt.Sprintf("%d entries", len(x))})
				return
			}
			parts = append(parts, s)
		}
		*rows = append(*rows, row{prefix, strings.Join(parts, ", ")})
	default:
		s, _ := scalar(x)
		*rows = append(*rows, row{prefix, s})
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
	return value + " " + unit, true
}

func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
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

// label turns a payload key into words: "rated_capacity" → "Rated capacity".
func label(key string) string {
	r := []rune(strings.ReplaceAll(key, "_", " "))
	if len(r) > 0 {
		r[0] = unicode.ToUpper(r[0])
	}
	return string(r)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func render(p page) ([]byte, error) {
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

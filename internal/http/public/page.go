package public

import (
	"bytes"
	_ "embed"
	"html/template"
	"strings"

	"github.com/bpc-platform/bpc/core/payloadview"
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
	Sections   []payloadview.Section
	Omitted    int
	Compliance []payloadview.Compliance
	Checks     []verify.Check
	Problem    string
	// QRInput is the scanned string a form shows again.
	QRInput string
	// Link is the page of a BPC-QR-2 link (GET /p/{id}): QR, when set,
	// compares the hashes the link printed.
	Link bool
	// Damaged says what is wrong with a link's hashes, which could then not
	// be compared.
	Damaged string
}

// MismatchNames names the link's hashes that differ, in words.
func (p page) MismatchNames() string {
	if p.QR == nil {
		return ""
	}
	words := map[string]string{"ph": "the payload hash (ph)", "pr": "the proof root (pr)", "rh": "the receipt hash (rh)"}
	names := make([]string, len(p.QR.Mismatched))
	for i, m := range p.QR.Mismatched {
		names[i] = words[m]
	}
	return strings.Join(names, ", ")
}

// Verified is what the banner says.
func (p page) Verified() bool {
	if p.Version == nil || p.Damaged != "" {
		return false
	}
	if p.QR != nil {
		return p.QR.QRMatches && p.QR.Verification.Verified
	}
	return p.Version.Verification.Verified
}

// versionPage lays out v: the payload's field groups in key order, its
// compliance results, and the verification checks of ver.
func versionPage(v VerifiedVersion, qrc *QRVerification) page {
	p := page{Title: v.Product.Name, Version: &v, QR: qrc, Checks: v.Verification.Checks}
	view, err := payloadview.Layout(v.Payload, maxRows)
	if err != nil {
		// The payload failed to verify too; the page says so already.
		p.Problem = "The passport's payload is not readable."
		return p
	}
	p.Sections, p.Compliance, p.Omitted = view.Sections, view.Compliance, view.Omitted
	return p
}

func render(p page) ([]byte, error) {
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

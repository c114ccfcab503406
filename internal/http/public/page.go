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
	// Manufacturer is the manufacturer the payload declares, when it
	// differs from the issuer's legal name (empty otherwise).
	Manufacturer string
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
	words := map[string]string{"ph": "the payload hash (ph)", "pr": "the proof root (pr)", "rh": "the receipt hash (rh)",
		"base": "the site the link leads to"}
	names := make([]string, len(p.QR.Mismatched))
	for i, m := range p.QR.Mismatched {
		names[i] = words[m]
	}
	return strings.Join(names, ", ")
}

// Verified is whether the banner is green.
func (p page) Verified() bool { return p.Verdict() == verify.VerdictVerified }

// Amber is whether the banner is amber: signed correctly, by the key of
// the tenant it names, whose identity is not verified.
func (p page) Amber() bool { return p.Verdict() == verify.VerdictIssuerNotVerified }

// Verdict is the page's verdict: the version's, and NOT_VERIFIED for a
// scanned QR that does not match it.
func (p page) Verdict() string {
	switch {
	case p.Version == nil, p.Damaged != "":
		return verify.VerdictNotVerified
	case p.QR != nil && !p.QR.QRMatches:
		return verify.VerdictNotVerified
	case p.QR != nil:
		return p.QR.Verification.Verdict
	}
	return p.Version.Verification.Verdict
}

// Failed lists the checks that failed, for the red banner.
func (p page) Failed() []verify.Check {
	var out []verify.Check
	for _, c := range p.Checks {
		if !c.OK {
			out = append(out, c)
		}
	}
	return out
}

// Issuer is the version's issuer.
func (p page) Issuer() *IssuerView {
	if p.Version == nil {
		return nil
	}
	return p.Version.Verification.Issuer
}

// Revoked is the signing key when it is revoked (the page shows the
// revocation even when this version was signed before it and verifies).
func (p page) Revoked() *VerifyingKey {
	if p.Version == nil || p.Version.SigningKey == nil || p.Version.SigningKey.RevokedAt == nil {
		return nil
	}
	return p.Version.SigningKey
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
	if m := payloadview.Manufacturer(v.Payload); m != "" {
		if is := v.Verification.Issuer; is == nil || is.LegalName == nil || !strings.EqualFold(m, *is.LegalName) {
			p.Manufacturer = m
		}
	}
	return p
}

func render(p page) ([]byte, error) {
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

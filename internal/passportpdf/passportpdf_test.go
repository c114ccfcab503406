package passportpdf_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/qr"
	"github.com/bpc-platform/bpc/internal/passportpdf"
	"github.com/bpc-platform/bpc/internal/pdftest"
)

var update = flag.Bool("update", false, "rewrite the golden PDF")

// sample is the NMC811 golden compile (core/compiler's testdata) as a
// signed, ACTIVE version with its QR code.
func sample(t *testing.T) passportpdf.Passport {
	t.Helper()
	payload, err := os.ReadFile("../../core/compiler/testdata/nmc811/payload.json")
	require.NoError(t, err)
	p := passportpdf.Passport{
		PassportVersionID: "0b7e4c2a-9d1f-4a3b-8c5d-6e7f8a9b0c1d",
		PassportID:        "3c9d8e7f-6a5b-4c3d-9e2f-1a0b9c8d7e6f",
		Version:           1,
		Status:            "ACTIVE",
		IssuedAt:          time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC),
		Product: passportpdf.Product{BatteryProductID: "a1b2c3d4-e5f6-4789-8abc-def012345678", SKU: "NMC811-75KWH",
			Name: "NMC811 75 kWh traction pack"},
		Payload:         payload,
		PayloadHash:     "a53bac464dd33a5372c0c1bea82de1e6308f2f927c8256b9b837945813616dec",
		ProofRootHash:   "02cfac4546d8bb49700b59022e7c784262489e1dfcd863b9e301fada32602c3c",
		ReceiptHash:     "c2ba246043594ecf2c9c5107a217ce54c170512da5470a507af6e700c70d32a2",
		SigningKeyID:    "dev-key-1",
		PublicKeyBase64: "O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik=",
		Signature:       "7Kk4w0h3n2mHn8m8p6wQm0Hq4nH0nGk9Gm0v1bqg8H3y0pQe0ZkA7QzB4u2Vv1mS4m9l4T0m2lC5pYx1eW3HDw==",
	}
	p.QRPayload, err = qr.Payload(p.PassportVersionID, p.PayloadHash, p.ProofRootHash, p.ReceiptHash)
	require.NoError(t, err)
	p.QRPNG, err = qr.PNG(p.QRPayload)
	require.NoError(t, err)
	return p
}

func render(t *testing.T, p passportpdf.Passport) string {
	t.Helper()
	b, err := passportpdf.Render(p)
	require.NoError(t, err)
	return pdftest.Write(t, b)
}

// The same version renders to the same bytes, in this process and in the
// golden file (go test ./passportpdf -update rewrites it after a deliberate
// change of the layout or of gopdf): no clock, no random document id.
func TestRenderIsDeterministic(t *testing.T) {
	t.Parallel()
	p := sample(t)
	first, err := passportpdf.Render(p)
	require.NoError(t, err)
	for range 3 {
		again, err := passportpdf.Render(p)
		require.NoError(t, err)
		require.Equal(t, first, again)
	}
	golden := filepath.Join("testdata", "nmc811.pdf")
	if *update {
		require.NoError(t, os.WriteFile(golden, first, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, first), "the rendering differs from %s (go test ./passportpdf -update after a deliberate change)", golden)

	require.True(t, bytes.HasPrefix(first, []byte("%PDF-1.")))
	require.Contains(t, string(first), "/CreationDate(D:20261122100000+00'00')", "the one date is the receipt's issued_at")
	require.NotContains(t, string(first), "/ModDate")
	require.NotContains(t, string(first), "/ID")

	// The date follows the version's issue time.
	p.IssuedAt = p.IssuedAt.Add(26 * time.Hour)
	later, err := passportpdf.Render(p)
	require.NoError(t, err)
	require.Contains(t, string(later), "/CreationDate(D:20261123120000+00'00')")
}

// What a reader or an auditor looks for is in the text poppler extracts,
// each hash, key and signature whole on its line; and the QR code decodes,
// both as the image embedded and as the page is printed.
func TestRenderReadsWithIndependentTools(t *testing.T) {
	t.Parallel()
	p := sample(t)
	path := render(t, p)

	text := pdftest.Text(t, path)
	words := pdftest.Words(t, path)
	for _, whole := range []string{p.PassportVersionID, p.PassportID, p.Product.BatteryProductID, p.PayloadHash, p.ProofRootHash,
		p.ReceiptHash, p.SigningKeyID, p.PublicKeyBase64, p.Signature, p.Product.SKU} {
		require.True(t, words[whole], "pdftotext finds %s as one word", whole)
	}
	for _, s := range []string{"NMC811 75 kWh traction pack", "Version 1 (ACTIVE)", "Issued 2026-11-22 10:00:00 UTC",
		"met ART8_RECYCLED_COBALT", "not met ART8_RECYCLED_NICKEL", "recycled nickel 4.0 % (minimum 6 %)",
		"Manufacturer › Name Voltaris Battery Systems GmbH", "Rated capacity 75 kWh", "Pack footprint 4597.5 kgCO2e"} {
		require.Contains(t, squeeze(text), s)
	}
	info := pdftest.Run(t, "pdfinfo", path)
	require.Regexp(t, `(?m)^Page size:\s+595 x 842 pts \(A4\)$`, info)
	require.Regexp(t, `(?m)^Title:\s+Battery passport: NMC811 75 kWh traction pack$`, info)

	require.Equal(t, []string{p.QRPayload}, pdftest.ImageQR(t, path), "the embedded image")
	require.Equal(t, p.QRPayload, pdftest.PageQR(t, path, 1), "the printed page")
}

// A payload with what a page cannot hold as given: words wider than the
// page, long lists, text the fonts have no glyphs for, control characters
// and more fields than a PDF lists. It renders, every word stays inside the
// margins, and the hashes are still whole.
func TestRenderKeepsTextOnThePage(t *testing.T) {
	t.Parallel()
	p := sample(t)
	long := strings.Repeat("0123456789abcdef", 30)
	fields := map[string]any{
		"general": map[string]any{"name": "电池护照 Zellchemie\u0007 ok", "identifier": long,
			"notes": strings.Repeat("a rather long sentence that wraps ", 40)},
	}
	for i := range 40 {
		group := map[string]any{}
		for j := range 10 {
			group["field_"+strconv.Itoa(j)] = strings.Repeat("x", j*9)
		}
		fields["group_"+strconv.Itoa(i)] = group
	}
	fields[strings.Repeat("a_very_long_group_name_", 12)] = map[string]any{"x": "y"}
	payload, err := json.Marshal(map[string]any{"fields": fields, "compliance": []map[string]any{
		{"code": "LONG", "field": "general.notes", "ok": false, "detail": strings.Repeat("detail ", 100)},
		{"code": strings.Repeat("VERY_LONG_CODE_", 20), "field": "x", "ok": true, "detail": strings.Repeat("endless ", 2000)}}})
	require.NoError(t, err)
	p.Payload = payload
	p.Product.Name = strings.Repeat("Very long product name ", 8)
	path := render(t, p)

	text := pdftest.Text(t, path)
	require.Contains(t, squeeze(text), "further fields are in the passport's payload")
	for _, whole := range []string{p.PayloadHash, p.ProofRootHash, p.ReceiptHash, p.Signature} {
		require.Regexp(t, `(?m)^\s*`+whole+`\s*$`, text)
	}
	require.Contains(t, text, "0123456789abcdef0123", "the long word is there, broken across lines")

	bbox := pdftest.Run(t, "pdftotext", "-bbox", path, "-")
	words := regexp.MustCompile(`<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)"`).FindAllStringSubmatch(bbox, -1)
	require.Greater(t, len(words), 500)
	for _, w := range words {
		xMin, _ := strconv.ParseFloat(w[1], 64)
		yMin, _ := strconv.ParseFloat(w[2], 64)
		xMax, _ := strconv.ParseFloat(w[3], 64)
		yMax, _ := strconv.ParseFloat(w[4], 64)
		require.GreaterOrEqual(t, xMin, 47.5, "%s", w[0])
		require.LessOrEqual(t, xMax, 595-47.5, "%s", w[0])
		require.GreaterOrEqual(t, yMin, 40.0, "%s", w[0])
		require.LessOrEqual(t, yMax, 842-40.0, "%s", w[0])
	}
	pages := regexp.MustCompile(`(?m)^Pages:\s+(\d+)$`).FindStringSubmatch(pdftest.Run(t, "pdfinfo", path))
	require.NotNil(t, pages)
	n, _ := strconv.Atoi(pages[1])
	require.Greater(t, n, 3)
}

// What cannot be rendered is an error, not a broken file.
func TestRenderRefusesUnreadableInput(t *testing.T) {
	t.Parallel()
	p := sample(t)
	p.QRPNG = []byte("not a PNG")
	_, err := passportpdf.Render(p)
	require.ErrorContains(t, err, "QR image")
	p = sample(t)
	p.Payload = []byte("[1,2")
	_, err = passportpdf.Render(p)
	require.ErrorContains(t, err, "payload")
}

// squeeze collapses runs of blanks, so that -layout's columns read as
// "label value".
func squeeze(s string) string {
	return regexp.MustCompile(`[ \t]+`).ReplaceAllString(s, " ")
}

// A passport's QR code is a BPC-QR-2 link, longer than BPC-QR-1: zbarimg
// reads it exactly from the embedded image and from the page printed at
// 150 dpi, up to the longest base a link may have.
func TestRenderPrintsAScannableLink(t *testing.T) {
	t.Parallel()
	longest := "https://" + strings.Repeat("a", 40) + "." + strings.Repeat("b", qr.MaxBaseURLLen-len("https://.")-40-len(".example.com")) + ".example.com"
	require.Len(t, longest, qr.MaxBaseURLLen)
	for _, base := range []string{"http://localhost:8080", "https://passports.example.com", longest} {
		p := sample(t)
		var err error
		p.QRPayload, err = qr.Link(base, p.PassportVersionID, p.PayloadHash, p.ProofRootHash, p.ReceiptHash)
		require.NoError(t, err)
		p.QRPNG, err = qr.PNG(p.QRPayload)
		require.NoError(t, err)
		path := render(t, p)
		require.Equal(t, []string{p.QRPayload}, pdftest.ImageQR(t, path), "the embedded image")
		require.Equal(t, p.QRPayload, pdftest.PageQR(t, path, 1), "the printed page, %s", base)

		text := squeeze(pdftest.Text(t, path))
		require.Contains(t, text, "QR code (BPC-QR-2 link)")
		words := pdftest.Words(t, path)
		for _, part := range []string{"?ph=", "&pr=", "&rh="} {
			i := strings.Index(p.QRPayload, part)
			require.True(t, words[p.QRPayload[i:i+len(part)+52]], "pdftotext finds %s… as one word", part)
		}
	}
}

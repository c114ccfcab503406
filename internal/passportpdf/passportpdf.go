// Package passportpdf renders a signed passport version as a PDF for a
// person to read and file: the battery product, the passport's main fields
// and compliance results, the hashes, key id and signature that make it
// verifiable, and the QR code the battery carries.
//
// The PDF is a rendering, not the record: the bytes that were hashed and
// signed are in the JSON export (BPC-EXPORT-1), which `bpc verify` checks.
// What the PDF promises is that the same version renders to the same bytes:
// its one date is the receipt's issued_at (no clock), it has no document
// id, and the fonts (the Go fonts, embedded as subsets) and objects are
// written in the order the page is drawn.
//
// It uses github.com/signintech/gopdf, a maintained pure-Go writer.
package passportpdf

import (
	"bytes"
	"fmt"
	"image/png"
	"strings"
	"time"
	"unicode"

	"github.com/signintech/gopdf"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/gomono"
	"golang.org/x/image/font/gofont/goregular"

	"github.com/bpc-platform/bpc/core/payloadview"
)

// Passport is what a PDF shows of a signed passport version.
type Passport struct {
	PassportVersionID string
	PassportID        string
	Version           int
	Status            string
	// IssuedAt is the receipt's issued_at; it is also the PDF's creation
	// date.
	IssuedAt time.Time
	Product  Product
	// Payload is the compiled payload's canonical bytes.
	Payload []byte
	// PayloadHash, ProofRootHash and ReceiptHash are lowercase hex SHA-256.
	PayloadHash   string
	ProofRootHash string
	ReceiptHash   string
	SigningKeyID  string
	// PublicKeyBase64 is the Ed25519 public key that verifies Signature.
	PublicKeyBase64 string
	// Signature is the receipt's Ed25519 signature, standard base64.
	Signature string
	// QRPayload is the QR code's text as stored (a BPC-QR-2 link, or the
	// BPC-QR-1 string of a version issued before links) and QRPNG its image.
	QRPayload string
	QRPNG     []byte
}

// Product is the battery product a passport describes.
type Product struct {
	BatteryProductID string
	SKU              string
	Name             string
}

// MaxFieldRows bounds the payload rows a PDF lists (as on the public page);
// the rest are counted, and are in the JSON export.
const MaxFieldRows = 300

// maxValueRunes bounds one value's text: a payload field that is a long
// list is cut with an ellipsis rather than filling pages.
const maxValueRunes = 600

// Page geometry, in points: A4 with 48 pt margins.
const (
	pageW, pageH = 595.0, 842.0
	margin       = 48.0
	contentW     = pageW - 2*margin
	bottom       = pageH - margin - 20 // above the footer line
	labelW       = 170.0
	qrSize       = 132.0
)

// face is a font at a size.
type face struct {
	family string
	size   float64
}

// The embedded fonts.
const (
	fontRegular = "regular"
	fontBold    = "bold"
	fontMono    = "mono"
)

// The faces of the document.
var (
	titleFace   = face{fontBold, 18}
	productFace = face{fontBold, 14}
	headingFace = face{fontBold, 12.5}
	textFace    = face{fontRegular, 9.5}
	strongFace  = face{fontBold, 9.5}
	monoFace    = face{fontMono, 8.5}
	smallFace   = face{fontRegular, 7.5}
)

// Line heights of text and of the monospaced values.
const (
	lineText = 13.0
	lineMono = 12.0
)

// Render renders p as an A4 PDF. The same p renders to the same bytes. The
// QR image must be a PNG; everything else is rendered as given, a value too
// wide for the page wrapping onto further lines (hashes, key and signature
// are set in a monospaced font small enough to stay on one line each).
func Render(p Passport) ([]byte, error) {
	view, err := payloadview.Layout(p.Payload, MaxFieldRows)
	if err != nil {
		return nil, err
	}
	if _, err := png.DecodeConfig(bytes.NewReader(p.QRPNG)); err != nil {
		return nil, fmt.Errorf("error reading the QR image: %w", err)
	}
	r := &renderer{}
	r.pdf.Start(gopdf.Config{PageSize: *gopdf.PageSizeA4, Unit: gopdf.UnitPT})
	r.pdf.SetInfo(gopdf.PdfInfo{
		Title:        "Battery passport: " + p.Product.Name,
		Subject:      "Passport version " + p.PassportVersionID,
		Creator:      "BPC job service",
		Producer:     "BPC job service (gopdf)",
		CreationDate: p.IssuedAt.UTC(),
	})
	for _, f := range []struct {
		name string
		ttf  []byte
	}{{fontRegular, goregular.TTF}, {fontBold, gobold.TTF}, {fontMono, gomono.TTF}} {
		if err := r.pdf.AddTTFFontData(f.name, f.ttf); err != nil {
			return nil, fmt.Errorf("error adding the %s font: %w", f.name, err)
		}
	}
	r.versionID = p.PassportVersionID
	r.newPage()

	r.header(p)
	r.compliance(view.Compliance)
	for _, s := range view.Sections {
		r.section(s)
	}
	if view.Omitted > 0 {
		r.paragraph(fmt.Sprintf("%d further fields are in the passport's payload (the JSON export) but not in this document.", view.Omitted))
	}
	r.verification(p)
	if r.err != nil {
		return nil, r.err
	}
	return r.pdf.GetBytesPdfReturnErr()
}

// renderer draws top to bottom, starting a new page when the next block
// does not fit. The first drawing error is kept in err and ends the work
// of every later call.
type renderer struct {
	pdf       gopdf.GoPdf
	versionID string
	y         float64
	page      int
	err       error
}

// newPage starts a page with its footer.
func (r *renderer) newPage() {
	r.pdf.AddPage()
	r.page++
	r.y = margin
	r.pdf.SetLineWidth(0.5)
	r.pdf.SetStrokeColor(170, 170, 170)
	r.pdf.Line(margin, pageH-margin-8, pageW-margin, pageH-margin-8)
	r.pdf.SetTextColor(85, 85, 85)
	r.text(margin, pageH-margin-4, smallFace, "Battery passport, version "+r.versionID)
	r.text(pageW-margin-40, pageH-margin-4, smallFace, fmt.Sprintf("page %d", r.page))
	r.pdf.SetTextColor(0, 0, 0)
}

// need starts a new page unless h more points fit on this one.
func (r *renderer) need(h float64) {
	if r.y+h > bottom {
		r.newPage()
	}
}

// font makes f the current font.
func (r *renderer) font(f face) {
	if r.err == nil {
		r.err = r.pdf.SetFont(f.family, "", f.size)
	}
}

// text draws one line in f at x, y (its top).
func (r *renderer) text(x, y float64, f face, s string) {
	r.font(f)
	if r.err != nil || s == "" {
		return
	}
	r.pdf.SetXY(x, y)
	r.err = r.pdf.Cell(nil, r.printable(s))
}

// printable replaces what the current font cannot draw (control
// characters, scripts the Go fonts lack) with '?', so that any payload
// text renders.
func (r *renderer) printable(s string) string {
	return strings.Map(func(c rune) rune {
		if unicode.IsControl(c) {
			return ' '
		}
		if ok, err := r.pdf.IsCurrFontContainGlyph(c); err != nil || !ok {
			if c == ' ' {
				return c
			}
			return '?'
		}
		return c
	}, s)
}

// wrap breaks s into lines at most width wide in f: at spaces where it
// can, inside a word that is wider than a line.
func (r *renderer) wrap(f face, s string, width float64) []string {
	r.font(f)
	if r.err != nil {
		return nil
	}
	s = r.printable(s)
	measure := func(t string) float64 {
		w, err := r.pdf.MeasureTextWidth(t)
		if err != nil && r.err == nil {
			r.err = err
		}
		return w
	}
	space := measure(" ")
	var lines []string
	var line strings.Builder
	lineW := 0.0
	flush := func() {
		lines = append(lines, line.String())
		line.Reset()
		lineW = 0
	}
	for _, word := range strings.Fields(s) {
		w := measure(word)
		if line.Len() > 0 && lineW+space+w <= width {
			line.WriteByte(' ')
			line.WriteString(word)
			lineW += space + w
			continue
		}
		if line.Len() > 0 {
			flush()
		}
		for w > width { // a word wider than the line: break it
			cut, cutW := 0, 0.0
			for i, c := range word {
				cw := measure(string(c))
				if cutW+cw > width && i > 0 {
					break
				}
				cut, cutW = i+len(string(c)), cutW+cw
			}
			lines = append(lines, word[:cut])
			word = word[cut:]
			w = measure(word)
		}
		line.WriteString(word)
		lineW = w
	}
	if line.Len() > 0 || len(lines) == 0 {
		flush()
	}
	return lines
}

// clip cuts s after maxValueRunes runes, with an ellipsis.
func clip(s string) string {
	if rs := []rune(s); len(rs) > maxValueRunes {
		return string(rs[:maxValueRunes]) + "…"
	}
	return s
}

// fit cuts s to one line of at most width in f, with an ellipsis.
func (r *renderer) fit(f face, s string, width float64) string {
	lines := r.wrap(f, clip(s), width-10)
	if len(lines) <= 1 {
		return s
	}
	return lines[0] + "…"
}

// header draws the title, the product and the version's identity, with
// the QR code at the right.
func (r *renderer) header(p Passport) {
	top := r.y
	r.text(margin, r.y, titleFace, "Battery passport")
	r.y += 26
	for _, l := range r.wrap(productFace, p.Product.Name, contentW-qrSize-16) {
		r.text(margin, r.y, productFace, l)
		r.y += 18
	}
	r.y += 4
	rows := []payloadview.Row{
		{Label: "Product (SKU)", Value: p.Product.SKU},
		{Label: "Battery product id", Value: p.Product.BatteryProductID},
		{Label: "Passport id", Value: p.PassportID},
		{Label: "Passport version id", Value: p.PassportVersionID},
		{Label: "Version", Value: fmt.Sprintf("%d (%s)", p.Version, p.Status)},
		{Label: "Issued", Value: p.IssuedAt.UTC().Format("2006-01-02 15:04:05 UTC")},
	}
	for _, row := range rows {
		r.row(row, 110, contentW-qrSize-16-110)
	}
	if r.err == nil {
		img, err := gopdf.ImageHolderByBytes(p.QRPNG)
		if err != nil {
			r.err = fmt.Errorf("error reading the QR image: %w", err)
			return
		}
		r.err = r.pdf.ImageByHolder(img, pageW-margin-qrSize, top, &gopdf.Rect{W: qrSize, H: qrSize})
	}
	r.y = max(r.y, top+qrSize) + 8
}

// heading starts a section: its title with a rule under it, kept on the
// page with the room for its first lines.
func (r *renderer) heading(title string) {
	r.need(26 + 3*lineText)
	r.y += 8
	r.text(margin, r.y, headingFace, r.fit(headingFace, title, contentW))
	r.y += 16
	if r.err == nil {
		r.pdf.SetLineWidth(0.5)
		r.pdf.SetStrokeColor(170, 170, 170)
		r.pdf.Line(margin, r.y, pageW-margin, r.y)
	}
	r.y += 5
}

// row draws a label and its value side by side, the value wrapped within
// valueW.
func (r *renderer) row(row payloadview.Row, labelWidth, valueW float64) {
	lines := r.wrap(textFace, clip(row.Value), valueW)
	labels := r.wrap(textFace, clip(row.Label), labelWidth-8)
	n := max(len(lines), len(labels))
	r.need(float64(n) * lineText)
	r.pdf.SetTextColor(85, 85, 85)
	for i, l := range labels {
		r.text(margin, r.y+float64(i)*lineText, textFace, l)
	}
	r.pdf.SetTextColor(0, 0, 0)
	for i, l := range lines {
		r.text(margin+labelWidth, r.y+float64(i)*lineText, textFace, l)
	}
	r.y += float64(n) * lineText
}

// compliance lists the compliance results, met or not met.
func (r *renderer) compliance(cs []payloadview.Compliance) {
	if len(cs) == 0 {
		return
	}
	r.heading("Compliance")
	for _, c := range cs {
		detail := r.wrap(textFace, clip(c.Detail), contentW-70)
		r.need(float64(1+len(detail)) * lineText)
		verdict := "met"
		r.pdf.SetTextColor(29, 107, 53)
		if !c.OK {
			verdict = "not met"
			r.pdf.SetTextColor(161, 36, 28)
		}
		r.text(margin, r.y, strongFace, verdict)
		r.pdf.SetTextColor(0, 0, 0)
		r.text(margin+70, r.y, strongFace, r.fit(strongFace, c.Code, contentW-70))
		r.y += lineText
		r.pdf.SetTextColor(85, 85, 85)
		for _, l := range detail {
			r.text(margin+70, r.y, textFace, l)
			r.y += lineText
		}
		r.pdf.SetTextColor(0, 0, 0)
		r.y += 2
	}
}

// section lists a field group's rows.
func (r *renderer) section(s payloadview.Section) {
	r.heading(s.Title)
	for _, row := range s.Rows {
		r.row(row, labelW, contentW-labelW)
	}
}

// paragraph draws text wrapped to the page width.
func (r *renderer) paragraph(s string) {
	lines := r.wrap(textFace, s, contentW)
	r.need(float64(len(lines))*lineText + 8)
	r.y += 8
	for _, l := range lines {
		r.text(margin, r.y, textFace, l)
		r.y += lineText
	}
}

// verification lists what makes the passport verifiable: each value on a
// line of its own in the monospaced font, where a hash, the key and the
// signature fit whole (so that copying or extracting the text finds them
// intact). The QR payload is broken at its separators.
func (r *renderer) verification(p Passport) {
	r.heading("Verification")
	r.paragraph("The passport's payload, proof and receipt are hashed with SHA-256 and the receipt hash is signed with Ed25519. " +
		"The JSON export carries the signed bytes; `bpc verify` checks them offline, and the QR code leads to the public verification page.")
	r.y += 4
	// A BPC-QR-1 payload breaks after its separators, a BPC-QR-2 link
	// before its query's: each hash stays whole on its line.
	qr, qrLabel := strings.ReplaceAll(p.QRPayload, "|", "|\n"), "QR payload (BPC-QR-1)"
	if !strings.HasPrefix(p.QRPayload, "BPC1|") {
		qr, qrLabel = strings.NewReplacer("?", "\n?", "&", "\n&").Replace(p.QRPayload), "QR code (BPC-QR-2 link)"
	}
	for _, v := range []struct{ label, value string }{
		{"Payload SHA-256", p.PayloadHash},
		{"Proof root hash", p.ProofRootHash},
		{"Receipt hash", p.ReceiptHash},
		{"Signing key id (ED25519)", p.SigningKeyID},
		{"Public key (base64)", p.PublicKeyBase64},
		{"Receipt signature (base64)", p.Signature},
		{qrLabel, qr},
	} {
		var lines []string
		for _, part := range strings.Split(v.value, "\n") {
			lines = append(lines, r.wrap(monoFace, part, contentW)...)
		}
		r.need(lineText + float64(len(lines))*lineMono + 4)
		r.text(margin, r.y, strongFace, v.label)
		r.y += lineText
		for _, l := range lines {
			r.text(margin, r.y, monoFace, l)
			r.y += lineMono
		}
		r.y += 4
	}
}

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
	"slices"
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
// Text the embedded fonts cannot draw is drawn as a marker saying so
// ("[Arabic text not shown]"; see printable). A section's title stays
// with its first rows, and its last row does not go alone to a new page.
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
	if r.hidden {
		r.paragraph(hiddenNote)
	}
	r.verification(p)
	if r.err != nil {
		return nil, r.err
	}
	return r.pdf.GetBytesPdfReturnErr()
}

// hiddenNote explains the fallback markers, after the fields when any
// was drawn.
const hiddenNote = "Text in square brackets such as [Arabic text not shown] or [U+1F50B not shown] stands for characters " +
	"this PDF's fonts cannot draw (they draw Latin, Greek and Cyrillic). The online passport and the JSON export show them as written."

// renderer draws top to bottom, starting a new page when the next block
// does not fit. The first drawing error is kept in err and ends the work
// of every later call.
type renderer struct {
	pdf       gopdf.GoPdf
	versionID string
	y         float64
	page      int
	// hidden is set when text was drawn as a fallback marker.
	hidden bool
	err    error
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

// need starts a new page unless h more points fit on this one. On a page
// with nothing drawn yet it draws on: what is taller than a page starts at
// its top rather than after a blank page.
func (r *renderer) need(h float64) {
	if r.y+h > bottom && r.y > margin {
		r.newPage()
	}
}

// keepTogether is how a titled list of blocks (a section's rows, the
// compliance results, the verification values) breaks across pages: the
// title stays with its first two blocks (a list of up to three is kept
// whole), and the last block never goes alone to the top of the next page
// (it takes the one before it along). heights are the blocks' heights;
// draw draws block i at r.y and moves r.y on.
func (r *renderer) keepTogether(title string, heights []float64, draw func(i int)) {
	n := len(heights)
	first := min(n, 2)
	if n <= 3 {
		first = n
	}
	r.heading(title, sum(heights[:first]))
	for i, h := range heights {
		if i >= first && i == n-2 {
			h += heights[n-1]
		}
		r.need(h)
		draw(i)
	}
}

func sum(hs []float64) float64 {
	t := 0.0
	for _, h := range hs {
		t += h
	}
	return t
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

// printable makes s drawable in the current font: a control character
// becomes a space, and a run of characters the font has no glyph for (the
// Go fonts draw Latin, Greek and Cyrillic; not Arabic, Hebrew, CJK or
// emoji) becomes a visible marker saying what is not shown (fallback), never
// a '?' that would read as part of the text. Format characters the font
// lacks (joiners, variation selectors) are dropped. r.hidden records that
// a marker was drawn, for the note that explains it.
func (r *renderer) printable(s string) string {
	has := func(c rune) bool {
		ok, err := r.pdf.IsCurrFontContainGlyph(c)
		return err == nil && ok
	}
	rs := []rune(s)
	var b strings.Builder
	markerEnd := -1 // where the last marker ended in b
	for i := 0; i < len(rs); {
		c := rs[i]
		switch {
		case unicode.IsControl(c):
			b.WriteByte(' ')
			i++
			continue
		case c == ' ' || has(c):
			b.WriteRune(c)
			i++
			continue
		case ignorable(c):
			i++
			continue
		}
		// A run of what the font cannot draw in one script (or of
		// symbols), with the blanks and format characters inside it.
		var run []rune
		j, name := i, script(c)
		for k := i; k < len(rs); k++ {
			c := rs[k]
			if c == ' ' || ignorable(c) {
				continue
			}
			if unicode.IsControl(c) || has(c) || script(c) != name {
				break
			}
			run = append(run, c)
			j = k + 1
		}
		if markerEnd == b.Len() {
			b.WriteByte(' ') // markers side by side read as words
		}
		b.WriteString(fallback(run))
		markerEnd = b.Len()
		r.hidden = true
		i = j
	}
	return b.String()
}

// ignorable are the characters a font need not draw: format characters
// (zero-width joiners, direction marks) and variation selectors.
func ignorable(c rune) bool {
	return unicode.Is(unicode.Cf, c) || unicode.Is(unicode.Variation_Selector, c)
}

// fallback is the marker drawn in place of runes the fonts cannot draw:
// the script they are written in ("[Arabic text not shown]"), or, for
// symbols and emoji (no script of their own), their code points
// ("[U+1F50B not shown]", the first three and "..." when there are more).
func fallback(run []rune) string {
	if name := script(run[0]); name != "" {
		return "[" + name + " text not shown]"
	}
	var cps []string
	for i, c := range run {
		if i == 3 {
			cps = append(cps, "...")
			break
		}
		cps = append(cps, fmt.Sprintf("U+%04X", c))
	}
	return "[" + strings.Join(cps, " ") + " not shown]"
}

// scriptNames are the names of unicode.Scripts in order, for a
// deterministic lookup.
var scriptNames = func() []string {
	names := make([]string, 0, len(unicode.Scripts))
	for name := range unicode.Scripts {
		if name != "Common" && name != "Inherited" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}()

// script names the script c is written in ("Arabic", "Han"), or "" for a
// symbol or mark common to scripts.
func script(c rune) string {
	for _, name := range scriptNames {
		if unicode.Is(unicode.Scripts[name], c) {
			return strings.ReplaceAll(name, "_", " ")
		}
	}
	return ""
}

// wrap breaks s into lines at most width wide in f: at spaces where it
// can, inside a word that is wider than a line.
func (r *renderer) wrap(f face, s string, width float64) []string {
	r.font(f)
	if r.err != nil {
		return nil
	}
	// Markers are longer than what they stand for: the text drawn is
	// bounded again.
	if rs := []rune(r.printable(s)); len(rs) > maxValueRunes+1 {
		s = string(rs[:maxValueRunes]) + "…"
	} else {
		s = string(rs)
	}
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

// headingH is the height of a heading.
const headingH = 8 + 16 + 5

// heading starts a section: its title with a rule under it, kept on the
// page with the follow points of what comes first under it.
func (r *renderer) heading(title string, follow float64) {
	r.need(headingH + follow)
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

// rowLines are a row's label and value, each wrapped to its column, and
// the row's height.
func (r *renderer) rowLines(row payloadview.Row, labelWidth, valueW float64) (labels, lines []string, h float64) {
	lines = r.wrap(textFace, clip(row.Value), valueW)
	labels = r.wrap(textFace, clip(row.Label), labelWidth-8)
	return labels, lines, float64(max(len(lines), len(labels))) * lineText
}

// row draws a label and its value side by side, the value wrapped within
// valueW.
func (r *renderer) row(row payloadview.Row, labelWidth, valueW float64) {
	labels, lines, h := r.rowLines(row, labelWidth, valueW)
	r.need(h)
	r.pdf.SetTextColor(85, 85, 85)
	for i, l := range labels {
		r.text(margin, r.y+float64(i)*lineText, textFace, l)
	}
	r.pdf.SetTextColor(0, 0, 0)
	for i, l := range lines {
		r.text(margin+labelWidth, r.y+float64(i)*lineText, textFace, l)
	}
	r.y += h
}

// compliance lists the compliance results, met or not met.
func (r *renderer) compliance(cs []payloadview.Compliance) {
	if len(cs) == 0 {
		return
	}
	details := make([][]string, len(cs))
	heights := make([]float64, len(cs))
	for i, c := range cs {
		details[i] = r.wrap(textFace, clip(c.Detail), contentW-70)
		heights[i] = float64(1+len(details[i]))*lineText + 2
	}
	r.keepTogether("Compliance", heights, func(i int) {
		c, detail := cs[i], details[i]
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
	})
}

// section lists a field group's rows.
func (r *renderer) section(s payloadview.Section) {
	heights := make([]float64, len(s.Rows))
	for i, row := range s.Rows {
		_, _, heights[i] = r.rowLines(row, labelW, contentW-labelW)
	}
	r.keepTogether(s.Title, heights, func(i int) { r.row(s.Rows[i], labelW, contentW-labelW) })
}

// paragraph draws text wrapped to the page width.
func (r *renderer) paragraph(s string) {
	lines := r.wrap(textFace, s, contentW)
	r.need(paragraphH(lines))
	r.y += 8
	for _, l := range lines {
		r.text(margin, r.y, textFace, l)
		r.y += lineText
	}
}

// paragraphH is the height of a paragraph of lines.
func paragraphH(lines []string) float64 {
	return float64(len(lines))*lineText + 8
}

// verificationIntro opens the verification section.
const verificationIntro = "The passport's payload, proof and receipt are hashed with SHA-256 and the receipt hash is signed with Ed25519. " +
	"The JSON export carries the signed bytes; `bpc verify` checks them offline, and the QR code leads to the public verification page."

// verification lists what makes the passport verifiable: each value on a
// line of its own in the monospaced font, where a hash, the key and the
// signature fit whole (so that copying or extracting the text finds them
// intact). The QR payload is broken at its separators.
func (r *renderer) verification(p Passport) {
	// A BPC-QR-1 payload breaks after its separators, a BPC-QR-2 link
	// before its query's: each hash stays whole on its line.
	qr, qrLabel := strings.ReplaceAll(p.QRPayload, "|", "|\n"), "QR payload (BPC-QR-1)"
	if !strings.HasPrefix(p.QRPayload, "BPC1|") {
		qr, qrLabel = strings.NewReplacer("?", "\n?", "&", "\n&").Replace(p.QRPayload), "QR code (BPC-QR-2 link)"
	}
	values := []struct{ label, value string }{
		{"Payload SHA-256", p.PayloadHash},
		{"Proof root hash", p.ProofRootHash},
		{"Receipt hash", p.ReceiptHash},
		{"Signing key id (ED25519)", p.SigningKeyID},
		{"Public key (base64)", p.PublicKeyBase64},
		{"Receipt signature (base64)", p.Signature},
		{qrLabel, qr},
	}
	// The blocks are the introduction and the values, each value's lines
	// wrapped in the monospaced font.
	intro := r.wrap(textFace, verificationIntro, contentW)
	lines := make([][]string, len(values))
	heights := []float64{paragraphH(intro) + 4}
	for i, v := range values {
		for _, part := range strings.Split(v.value, "\n") {
			lines[i] = append(lines[i], r.wrap(monoFace, part, contentW)...)
		}
		heights = append(heights, lineText+float64(len(lines[i]))*lineMono+4)
	}
	r.keepTogether("Verification", heights, func(i int) {
		if i == 0 {
			r.paragraph(verificationIntro)
			r.y += 4
			return
		}
		r.text(margin, r.y, strongFace, values[i-1].label)
		r.y += lineText
		for _, l := range lines[i-1] {
			r.text(margin, r.y, monoFace, l)
			r.y += lineMono
		}
		r.y += 4
	})
}

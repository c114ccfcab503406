package passportpdf_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/payloadview"
	"github.com/bpc-platform/bpc/internal/passportpdf"
	"github.com/bpc-platform/bpc/internal/pdftest"
)

// placed is where the blocks of a PDF's lists landed: for each titled list
// (the compliance results, each section, the verification values), the
// page of its title and of each of its blocks, read back with pdftotext
// page by page.
type placed struct {
	Title  string
	Page   int
	Blocks []int
}

// list is a titled list as a PDF should draw it: its title and how each
// block's first line starts.
type list struct {
	title  string
	blocks []string
}

// lists are the titled lists of a passport's PDF, in the order drawn.
func lists(t *testing.T, p passportpdf.Passport) []list {
	t.Helper()
	view, err := payloadview.Layout(p.Payload, passportpdf.MaxFieldRows)
	require.NoError(t, err)
	var out []list
	if len(view.Compliance) > 0 {
		l := list{title: "Compliance"}
		for _, c := range view.Compliance {
			verdict := "met "
			if !c.OK {
				verdict = "not met "
			}
			l.blocks = append(l.blocks, verdict+c.Code)
		}
		out = append(out, l)
	}
	for _, s := range view.Sections {
		l := list{title: s.Title}
		for _, row := range s.Rows {
			// A label wraps within its column; its first words are on the
			// row's first line.
			label := []rune(row.Label)
			l.blocks = append(l.blocks, string(label[:min(len(label), 14)]))
		}
		out = append(out, l)
	}
	return append(out, list{title: "Verification", blocks: []string{"The passport's payload", "Payload SHA-256", "Proof root hash",
		"Receipt hash", "Signing key id", "Public key", "Receipt signature", "QR payload"}})
}

// placeLists finds the lists' titles and blocks in the order drawn in the
// pages' text and says on which page each is.
func placeLists(t *testing.T, path string, want []list) []placed {
	t.Helper()
	type line struct {
		page int
		text string
	}
	var lines []line
	for i, page := range pdftest.PageLines(t, path) {
		for _, l := range page {
			lines = append(lines, line{i + 1, l})
		}
	}
	at := 0
	find := func(what string, match func(string) bool) int {
		t.Helper()
		for ; at < len(lines); at++ {
			if match(lines[at].text) {
				at++
				return lines[at-1].page
			}
		}
		t.Fatalf("%s: not found in the PDF's text after the previous one", what)
		return 0
	}
	out := make([]placed, 0, len(want))
	for _, l := range want {
		p := placed{Title: l.title, Page: find("title "+l.title, func(s string) bool { return s == l.title })}
		for _, b := range l.blocks {
			p.Blocks = append(p.Blocks, find(l.title+": "+b, func(s string) bool { return strings.HasPrefix(s, b) }))
		}
		out = append(out, p)
	}
	return out
}

// requireKeptTogether holds the page-break rules: a title is on the page
// of its first two blocks (a list of at most three is on one page), and a
// list's last block is never alone at the top of a page.
func requireKeptTogether(t *testing.T, ps []placed) {
	t.Helper()
	for _, p := range ps {
		n := len(p.Blocks)
		keep := min(n, 2)
		if n <= 3 {
			keep = n
		}
		for i := range keep {
			require.Equal(t, p.Page, p.Blocks[i], "%q: its title is on page %d, its block %d on page %d", p.Title, p.Page, i+1, p.Blocks[i])
		}
		if n >= 2 {
			require.Equal(t, p.Blocks[n-2], p.Blocks[n-1], "%q: its last block is alone on page %d", p.Title, p.Blocks[n-1])
		}
	}
}

// The sample's PDF: no title alone at the bottom of a page, no section's
// last row alone at the top of the next (the "Voltage span" row once was).
func TestRenderKeepsTitlesWithTheirRows(t *testing.T) {
	t.Parallel()
	p := sample(t)
	ps := placeLists(t, render(t, p), lists(t, p))
	requireKeptTogether(t, ps)
	require.Greater(t, ps[len(ps)-1].Page, 1, "the sample takes more than a page")
}

// rowsPayload is a payload of three sections: "A filler" of filler rows,
// "B target" of six and "C tail" of tail rows.
func rowsPayload(t *testing.T, filler, tail int) []byte {
	t.Helper()
	rows := func(prefix string, n int) map[string]any {
		m := map[string]any{}
		for i := range n {
			m[fmt.Sprintf("%s_%03d", prefix, i)] = "a value"
		}
		return m
	}
	payload, err := json.Marshal(map[string]any{"fields": map[string]any{
		"a_filler": rows("row", filler), "b_target": rows("item", 6), "c_tail": rows("tail", tail)}})
	require.NoError(t, err)
	return payload
}

// Constructed so that a page break falls at every line of a section, of
// the title after it and of the verification values: a first section of k
// rows pushes the rest down line by line, then a last section of k rows
// pushes the verification values. Every rendering keeps its titles with
// their rows; among them are ones where a title was moved to the next
// page and ones where a list was split with its last two blocks on the
// next page.
func TestRenderKeepsTitlesWithTheirRowsAtEveryBreak(t *testing.T) {
	t.Parallel()
	movedTitle, split, movedVerification, splitVerification := false, false, false, false
	for k := 25; k <= 55; k++ {
		p := sample(t)
		p.Payload = rowsPayload(t, k, 2)
		ps := placeLists(t, render(t, p), lists(t, p))
		requireKeptTogether(t, ps)
		fill, tgt := ps[0], ps[1]
		require.Equal(t, "B target", tgt.Title)
		if fill.Blocks[k-1] == 1 && tgt.Page == 2 {
			movedTitle = true
		}
		if tgt.Page == 1 && tgt.Blocks[5] == 2 {
			split = true
		}
	}
	for k := 20; k <= 60; k++ {
		p := sample(t)
		p.Payload = rowsPayload(t, 30, k)
		ps := placeLists(t, render(t, p), lists(t, p))
		requireKeptTogether(t, ps)
		tail, ver := ps[2], ps[3]
		require.Equal(t, "Verification", ver.Title)
		if tail.Blocks[k-1] < ver.Page {
			movedVerification = true
		}
		if ver.Page < ver.Blocks[len(ver.Blocks)-1] {
			splitVerification = true
		}
	}
	require.True(t, movedTitle, "a break fell at a section's title")
	require.True(t, split, "a break fell inside a section")
	require.True(t, movedVerification, "a break fell at the verification's title")
	require.True(t, splitVerification, "a break fell among the verification values")
}

// Latin, Greek and Cyrillic text is drawn as itself (pdftotext gives it
// back); what the embedded fonts cannot draw (Arabic, Hebrew, CJK, emoji)
// is a visible marker naming the script or the code points, never a '?',
// with a note saying what the markers mean. The rendering stays
// deterministic.
func TestRenderScripts(t *testing.T) {
	t.Parallel()
	p := sample(t)
	p.Product.Name = "Αλφα Ω Батарея Ærø Straße"
	p.Payload = []byte(`{"fields":{"general":{"maker":"Ελληνικά Μπαταρίες ΑΕ","city":"Новосибирск","street":"Hafenstraße 7, Ærøskøbing",` +
		`"name_ar":"بطارية ليثيوم","name_zh":"电池护照","name_he":"סוללה","icon":"🔋 ⚡ charged","mixed":"Zelle 电池 cell 👍🏽 ok"}}}`)
	path := render(t, p)
	lines := pdftest.PageLines(t, path)[0]
	text := strings.Join(lines, "\n")
	require.Equal(t, "Αλφα Ω Батарея Ærø Straße", lines[1], "the product name")
	for _, want := range []string{
		"Maker Ελληνικά Μπαταρίες ΑΕ", "City Новосибирск", "Street Hafenstraße 7, Ærøskøbing",
		"Name ar [Arabic text not shown]", "Name zh [Han text not shown]", "Name he [Hebrew text not shown]",
		"Icon [U+1F50B U+26A1 not shown] charged", "Mixed Zelle [Han text not shown] cell [U+1F44D U+1F3FD not shown] ok",
	} {
		require.Contains(t, text, want)
	}
	require.NotContains(t, text, "?")
	all := strings.Join(strings.Fields(pdftest.Text(t, path)), " ")
	require.Contains(t, all, "Text in square brackets such as [Arabic text not shown]")

	again, err := passportpdf.Render(p)
	require.NoError(t, err)
	first, err := passportpdf.Render(p)
	require.NoError(t, err)
	require.Equal(t, first, again)

	// Attacker input: a value alternating scripts at every character, as
	// long as a payload may carry, is cut and drawn as markers; the page
	// stays bounded and nothing is a '?'.
	p.Payload, err = json.Marshal(map[string]any{"fields": map[string]any{"general": map[string]any{
		"noise": strings.Repeat("ب🔋中‍א", 20000)}}})
	require.NoError(t, err)
	path = render(t, p)
	noise := strings.Join(strings.Fields(pdftest.Text(t, path)), " ")
	require.Contains(t, noise, "[Arabic text not shown] [U+1F50B not shown] [Han text not shown] [Hebrew text not shown] [Arabic text not shown]")
	require.NotContains(t, noise, "?")
	require.Contains(t, noise, "… Text in square brackets", "cut, then the note")
	require.LessOrEqual(t, pdftest.Pages(t, path), 4)

	// Without such text there is no note.
	require.NotContains(t, strings.Join(strings.Fields(pdftest.Text(t, render(t, sample(t)))), " "), "square brackets")
}

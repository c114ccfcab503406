// Package pdftest reads PDFs in tests with independent tools: poppler's
// pdftotext, pdfinfo, pdfimages and pdftoppm, and zbar's zbarimg for QR
// codes (Debian's poppler-utils and zbar-tools; scripts/deps.sh installs
// them). A missing tool fails the test that needs it; it never skips.
package pdftest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Tool returns the path of program name from Debian package pkg, or fails
// the test saying how to install it.
func Tool(t testing.TB, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	require.NoError(t, err, "%s is needed to check the PDF: apt-get install %s (or bash scripts/deps.sh)", name, pkg)
	return path
}

// Write writes pdf to a temporary file and returns its path.
func Write(t testing.TB, pdf []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "passport.pdf")
	require.NoError(t, os.WriteFile(path, pdf, 0o600))
	return path
}

// Run runs a poppler program and returns its standard output.
func Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(Tool(t, name, "poppler-utils"), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s %s: %s", name, strings.Join(args, " "), stderr.String())
	return string(out)
}

// Text is pdftotext -layout of the file at path.
func Text(t testing.TB, path string) string {
	t.Helper()
	return Run(t, "pdftotext", "-layout", path, "-")
}

// Words are the blank-separated words of pdftotext's text of path, each
// as it was extracted: a hash broken across lines is not among them.
func Words(t testing.TB, path string) map[string]bool {
	t.Helper()
	words := map[string]bool{}
	for _, w := range strings.Fields(Text(t, path)) {
		words[w] = true
	}
	return words
}

// ImageQR extracts the file's images with pdfimages (as PNG) and returns
// what zbarimg decodes from each, in order.
func ImageQR(t testing.TB, path string) []string {
	t.Helper()
	dir := t.TempDir()
	Run(t, "pdfimages", "-png", path, filepath.Join(dir, "img"))
	images, err := filepath.Glob(filepath.Join(dir, "img-*.png"))
	require.NoError(t, err)
	out := make([]string, 0, len(images))
	for _, img := range images {
		out = append(out, Zbar(t, img))
	}
	return out
}

// PageQR renders page n of the file with pdftoppm at 150 dpi, as a printer
// or a screen shows it, and returns what zbarimg decodes from it.
func PageQR(t testing.TB, path string, n int) string {
	t.Helper()
	prefix := filepath.Join(t.TempDir(), "page")
	Run(t, "pdftoppm", "-r", "150", "-png", "-singlefile", "-f", strconv.Itoa(n), "-l", strconv.Itoa(n), path, prefix)
	return Zbar(t, prefix+".png")
}

// Zbar decodes the one QR code of an image file with zbarimg.
func Zbar(t testing.TB, image string) string {
	t.Helper()
	// Standard output only: zbarimg may complain of a missing D-Bus on
	// standard error. QR codes only: with every symbology on, zbar now and
	// then also reads a one-dimensional code out of the QR modules (seen in
	// CI: a codabar "A:7D" after the link).
	out, err := exec.Command(Tool(t, "zbarimg", "zbar-tools"), "-q", "--raw", "-Sdisable", "-Sqrcode.enable", image).Output()
	require.NoError(t, err, "zbarimg %s found no code", image)
	return strings.TrimSpace(string(out))
}

// Pages is the number of pages of the file at path, as pdfinfo counts them.
func Pages(t testing.TB, path string) int {
	t.Helper()
	for _, line := range strings.Split(Run(t, "pdfinfo", path), "\n") {
		if rest, ok := strings.CutPrefix(line, "Pages:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(rest))
			require.NoError(t, err, line)
			return n
		}
	}
	t.Fatalf("pdfinfo %s: no page count", path)
	return 0
}

// PageLines are the non-blank lines of pdftotext -layout's text of each
// page of the file at path, trimmed and with runs of blanks squeezed to
// one space (so that a label and its value read "label value"): element
// n-1 is page n.
func PageLines(t testing.TB, path string) [][]string {
	t.Helper()
	n := Pages(t, path)
	pages := make([][]string, n)
	for i := range n {
		page := strconv.Itoa(i + 1)
		for _, line := range strings.Split(Run(t, "pdftotext", "-layout", "-f", page, "-l", page, path, "-"), "\n") {
			if line = strings.Join(strings.Fields(line), " "); line != "" {
				pages[i] = append(pages[i], line)
			}
		}
	}
	return pages
}

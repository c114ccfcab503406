package qr_test

import (
	"bytes"
	"image/png"
	"strings"
	"testing"

	"github.com/makiuchi-d/gozxing"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/core/qr"
)

// goldenLink is golden's BPC-QR-2 link under https://passports.example.com,
// written out by hand from the same base32 strings.
const goldenLink = "https://passports.example.com/p/6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f" +
	"?ph=AFNL2724YV5C3WKLOWIPASWYBBBHHEC64M7MLTV6VZRCO2UX7BRA" +
	"&pr=IMSYZ73YH7TQG3MKIMBT7AYK37DA5QBXHASHGVEKY5BLRCBJE53Q" +
	"&rh=4OYMIQUY7QOBJGX36TEJS35ZEQT24QPEMSNZGTFESWMRW6CSXBKQ"

const goldenBase = "https://passports.example.com"

func linkFields(base string) qr.Fields {
	f := fixture()
	f.Format, f.BaseURL = qr.FormatQR2, base
	return f
}

func TestLinkGolden(t *testing.T) {
	t.Parallel()
	got, err := qr.Link(goldenBase, pvID, payloadHash, proofRoot, receiptHash)
	require.NoError(t, err)
	require.Equal(t, goldenLink, got)

	fields, err := qr.Parse(got)
	require.NoError(t, err)
	require.Equal(t, linkFields(goldenBase), fields)
	again, err := qr.Encode(fields)
	require.NoError(t, err)
	require.Equal(t, goldenLink, again)

	// The same hashes as BPC-QR-1 carries, in the same spelling.
	one, err := qr.Parse(golden)
	require.NoError(t, err)
	one.Format, one.BaseURL = fields.Format, fields.BaseURL
	require.Equal(t, fields, one)
}

// maxBase is a base of exactly MaxBaseURLLen bytes.
var maxBase = "https://" + strings.Repeat("a", 40) + "." + strings.Repeat("b", qr.MaxBaseURLLen-len("https://.")-40-len(".example.com")) + ".example.com"

func TestBaseURLRules(t *testing.T) {
	t.Parallel()
	require.Len(t, maxBase, qr.MaxBaseURLLen)
	for _, base := range []string{
		"https://passports.example.com",
		"http://localhost:8080",
		"http://127.0.0.1:9000",
		"http://[::1]:8080",
		"https://[2001:db8::1]",
		"https://example.com/bpc",
		"https://example.com/a/B-c_d.e~f",
		"https://xn--bcher-kva.example:65535",
		maxBase,
	} {
		require.NoError(t, qr.CheckBaseURL(base), base)
		link, err := qr.Link(base, pvID, payloadHash, proofRoot, receiptHash)
		require.NoError(t, err, base)
		f, err := qr.Parse(link)
		require.NoError(t, err, base)
		require.Equal(t, linkFields(base), f)
	}
	for _, tt := range []struct{ base, msg string }{
		{"", "must start with https:// or http://"},
		{"passports.example.com", "must start with https:// or http://"},
		{"ftp://example.com", "must start with https:// or http://"},
		{"HTTPS://example.com", "must start with https:// or http://"},
		{"https://", "must name a host"},
		{"https://Example.com", "must name a host"},
		{"https://exa mple.com", "must name a host"},
		{"https://example..com", "must name a host"},
		{"https://-example.com", "must name a host"},
		{"https://bücher.example", "must name a host"},
		{"https://example.com/", "must not end with a slash"},
		{"https://example.com/bpc/", "must not end with a slash"},
		{"https://example.com//bpc", "path segments"},
		{"https://example.com/a/../b", "path segments"},
		{"https://example.com/a%2Fb", "path segments"},
		{"https://example.com?x=1", "no query or fragment"},
		{"https://example.com#top", "no query or fragment"},
		{"https://user:pw@example.com", "no user info"},
		{"https://example.com:0", "port must be a number from 1 to 65535"},
		{"https://example.com:65536", "port must be a number from 1 to 65535"},
		{"https://example.com:08080", "port must be a number from 1 to 65535"},
		{"https://example.com:+80", "port must be a number from 1 to 65535"},
		{"https://example.com:", "port must be a number from 1 to 65535"},
		{"https://[::1%eth0]", "must name a host"},
		{"https://[0:0::1]", "must name a host"},
		{"https://[127.0.0.1]", "must name a host"},
		{maxBase + "x", "must be at most 100 bytes, got 101"},
	} {
		err := qr.CheckBaseURL(tt.base)
		e := errcode.As(err)
		require.NotNil(t, e, "%q must be refused", tt.base)
		require.Equal(t, errcode.Validation, e.Code)
		require.Equal(t, "base_url", e.Field)
		require.Contains(t, e.Error(), tt.msg, tt.base)

		_, err = qr.Link(tt.base, pvID, payloadHash, proofRoot, receiptHash)
		require.Equal(t, "base_url", errcode.As(err).Field, tt.base)
	}
}

func TestParseLinkRejects(t *testing.T) {
	t.Parallel()
	replace := func(old, new string) string {
		require.Contains(t, goldenLink, old)
		return strings.Replace(goldenLink, old, new, 1)
	}
	ph := "AFNL2724YV5C3WKLOWIPASWYBBBHHEC64M7MLTV6VZRCO2UX7BRA"
	pr := "IMSYZ73YH7TQG3MKIMBT7AYK37DA5QBXHASHGVEKY5BLRCBJE53Q"
	rh := "4OYMIQUY7QOBJGX36TEJS35ZEQT24QPEMSNZGTFESWMRW6CSXBKQ"
	long := "https://" + strings.Repeat("a", 200) + goldenLink[len(goldenBase):]
	tests := []struct {
		name string
		in   string
		msg  string
	}{
		{"base only", goldenBase, "must end with /p/<passport_version_id>"},
		{"trailing slash in base", replace(goldenBase, goldenBase+"/"), "base must not end with a slash"},
		{"uppercase host", replace("passports", "Passports"), "base must name a host"},
		{"query appended", goldenLink + "&x=1", `link part 1 must start with "/p/"`},
		{"fragment appended", goldenLink + "#x", `link part 1 must start with "/p/"`},
		{"query in base", replace(goldenBase, goldenBase+"/?x=1"), "base must have no query or fragment"},
		{"params swapped", replace("?ph="+ph+"&pr="+pr, "?pr="+pr+"&ph="+ph), `link part 2 must start with "?ph="`},
		{"semicolons", replace("&rh=", ";rh="), `link part 4 must start with "&rh="`},
		{"other path", replace("/p/", "/q/"), `link part 1 must start with "/p/"`},
		{"uppercase uuid", replace(pvID, strings.ToUpper(pvID)), "pv must be a lowercase UUID"},
		{"lowercase base32", replace(ph, strings.ToLower(ph)), "ph is not unpadded upper-case base32"},
		{"percent-encoded", replace(pr[:3], "%41"), "pr is not unpadded upper-case base32"},
		{"nonzero trailing bits", replace(rh, rh[:51]+"R"), "rh is not the canonical base32 of a 32-byte hash"},
		{"hash cut short", replace(rh, rh[:50]), "link part"},
		{"too long", long, "a BPC-QR-2 link must be at most"},
		{"huge", "https://" + strings.Repeat("x", 1<<20), "a BPC-QR-2 link must be at most"},
		{"http prefix only", "https://", "must end with"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			requireRefused(t, tt.in, tt.msg)
		})
	}
}

// versionOf is the QR version of a PNG with ModulePixels per module and
// a 4-module quiet zone.
func versionOf(t *testing.T, pngBytes []byte) int {
	t.Helper()
	cfg, err := png.DecodeConfig(bytes.NewReader(pngBytes))
	require.NoError(t, err)
	require.Equal(t, cfg.Width, cfg.Height)
	require.Zero(t, cfg.Width%qr.ModulePixels)
	modules := cfg.Width/qr.ModulePixels - 8
	require.Zero(t, (modules-17)%4)
	return (modules - 17) / 4
}

func TestLinkPNGDecodesToExactLinkInTheSmallestVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		base    string
		version int
	}{
		// The link's characters mostly fit the alphanumeric mode's
		// upper-case run of base32; the rest is bytes.
		{"http://localhost:8080", 10},
		{goldenBase, 10},
		{maxBase, 12},
	}
	for _, tt := range tests {
		link, err := qr.Link(tt.base, pvID, payloadHash, proofRoot, receiptHash)
		require.NoError(t, err)
		pngBytes, err := qr.PNG(link)
		require.NoError(t, err)
		require.Equal(t, tt.version, versionOf(t, pngBytes), tt.base)

		result := decodeQR(t, pngBytes)
		require.Equal(t, link, result.GetText())
		require.Equal(t, "M", result.GetResultMetadata()[gozxing.ResultMetadataType_ERROR_CORRECTION_LEVEL])

		again, err := qr.PNG(link)
		require.NoError(t, err)
		require.Equal(t, pngBytes, again, "same link, byte-identical PNG")
		ok, err := qr.IsRendering(link, pngBytes)
		require.NoError(t, err)
		require.True(t, ok)
	}
}

func TestIsRenderingTellsTheFormatsApart(t *testing.T) {
	t.Parallel()
	linkPNG, err := qr.PNG(goldenLink)
	require.NoError(t, err)
	onePNG, err := qr.PNG(golden)
	require.NoError(t, err)

	ok, err := qr.IsRendering(golden, linkPNG)
	require.NoError(t, err)
	require.False(t, ok, "a link's image is not the BPC-QR-1 payload's")
	ok, err = qr.IsRendering(goldenLink, onePNG)
	require.NoError(t, err)
	require.False(t, ok, "a BPC-QR-1 image is not the link's")

	other, err := qr.Link("https://other.example.com", pvID, payloadHash, proofRoot, receiptHash)
	require.NoError(t, err)
	ok, err = qr.IsRendering(other, linkPNG)
	require.NoError(t, err)
	require.False(t, ok, "another base, another image")

	ok, err = qr.IsRendering(goldenBase+"/", linkPNG)
	require.False(t, ok)
	require.Equal(t, errcode.Validation, errcode.CodeOf(err))
}

// The PNG bytes of a link are stored with the version and compared by the
// verifier: a change of the encoding shows here first.
const goldenLinkPNGSHA256 = "e7923383eb5fefa8e28fce18c48ba1fd54244e22795921678aaae9ed04503552"

func TestLinkPNGGolden(t *testing.T) {
	t.Parallel()
	b, err := qr.PNG(goldenLink)
	require.NoError(t, err)
	require.Equal(t, goldenLinkPNGSHA256, hash.SHA256Hex(b))
}

func TestEncodeRefusesAnUnknownFormat(t *testing.T) {
	t.Parallel()
	f := fixture()
	f.Format = "BPC-QR-3"
	_, err := qr.Encode(f)
	require.Equal(t, "format", errcode.As(err).Field)
}

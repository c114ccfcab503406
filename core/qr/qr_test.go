package qr_test

import (
	"bytes"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/makiuchi-d/gozxing"
	zxqrcode "github.com/makiuchi-d/gozxing/qrcode"
	qrcode "github.com/skip2/go-qrcode"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/core/qr"
)

const (
	pvID        = "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f"
	payloadHash = "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862" // SHA-256 of {"a":1}
	proofRoot   = "43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777" // SHA-256 of {"a":1,"b":2}
	receiptHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" // SHA-256 of ""
)

// golden is written out by hand; the base32 strings were computed with
// Python's base64.b32encode(bytes.fromhex(h)).rstrip(b"=").
const golden = "BPC1|pv=6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f" +
	"|ph=AFNL2724YV5C3WKLOWIPASWYBBBHHEC64M7MLTV6VZRCO2UX7BRA" +
	"|pr=IMSYZ73YH7TQG3MKIMBT7AYK37DA5QBXHASHGVEKY5BLRCBJE53Q" +
	"|rh=4OYMIQUY7QOBJGX36TEJS35ZEQT24QPEMSNZGTFESWMRW6CSXBKQ"

func fixture() qr.Fields {
	return qr.Fields{Format: qr.FormatQR1, PassportVersionID: pvID, PayloadHash: payloadHash, ProofRootHash: proofRoot, ReceiptHash: receiptHash}
}

// uniform returns fields whose three hashes repeat one hex digit.
func uniform(pv, digit string) qr.Fields {
	h := strings.Repeat(digit, 64)
	return qr.Fields{Format: qr.FormatQR1, PassportVersionID: pv, PayloadHash: h, ProofRootHash: h, ReceiptHash: h}
}

func payloadOf(f qr.Fields) (string, error) {
	return qr.Payload(f.PassportVersionID, f.PayloadHash, f.ProofRootHash, f.ReceiptHash)
}

func TestPayloadGolden(t *testing.T) {
	t.Parallel()
	got, err := payloadOf(fixture())
	require.NoError(t, err)
	require.Equal(t, golden, got)
	require.Len(t, got, qr.PayloadLen)
	require.Equal(t, 212, qr.PayloadLen)

	fields, err := qr.Parse(got)
	require.NoError(t, err)
	require.Equal(t, fixture(), fields)
}

type namedFields struct {
	name string
	in   qr.Fields
}

// roundTripFields are the fields both the payload and the PNG must carry
// through exactly: the fixture and the extreme digits.
func roundTripFields() []namedFields {
	return []namedFields{
		{"fixture", fixture()},
		{"all zero", uniform("00000000-0000-0000-0000-000000000000", "0")},
		{"all ones", uniform("ffffffff-ffff-ffff-ffff-ffffffffffff", "f")},
	}
}

func TestPayloadRoundTrip(t *testing.T) {
	t.Parallel()
	tests := append(roundTripFields(),
		namedFields{"same hashes", qr.Fields{Format: qr.FormatQR1, PassportVersionID: pvID, PayloadHash: payloadHash, ProofRootHash: payloadHash, ReceiptHash: payloadHash}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := payloadOf(tt.in)
			require.NoError(t, err)
			require.Len(t, s, qr.PayloadLen)
			got, err := qr.Parse(s)
			require.NoError(t, err)
			require.Equal(t, tt.in, got)
		})
	}
}

func TestPayloadRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(*qr.Fields)
		field  string
	}{
		{"empty uuid", func(f *qr.Fields) { f.PassportVersionID = "" }, "passport_version_id"},
		{"uppercase uuid", func(f *qr.Fields) { f.PassportVersionID = strings.ToUpper(pvID) }, "passport_version_id"},
		{"uuid without dashes", func(f *qr.Fields) { f.PassportVersionID = strings.ReplaceAll(pvID, "-", "") }, "passport_version_id"},
		{"uuid with a pipe", func(f *qr.Fields) { f.PassportVersionID = pvID[:35] + "|" }, "passport_version_id"},
		{"short payload hash", func(f *qr.Fields) { f.PayloadHash = payloadHash[:62] }, "payload_hash"},
		{"uppercase proof root", func(f *qr.Fields) { f.ProofRootHash = strings.ToUpper(proofRoot) }, "proof_root_hash"},
		{"non-hex receipt hash", func(f *qr.Fields) { f.ReceiptHash = strings.Repeat("x", 64) }, "receipt_hash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fixture()
			tt.mutate(&f)
			got, err := payloadOf(f)
			require.Empty(t, got)
			e := errcode.As(err)
			require.NotNil(t, e)
			require.Equal(t, errcode.Validation, e.Code)
			require.Equal(t, tt.field, e.Field)
			if tt.field != "passport_version_id" {
				require.ErrorIs(t, err, hash.ErrInvalidDigest)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	replace := func(old, new string) string {
		require.Contains(t, golden, old)
		return strings.Replace(golden, old, new, 1)
	}
	ph := "AFNL2724YV5C3WKLOWIPASWYBBBHHEC64M7MLTV6VZRCO2UX7BRA"
	rh := "4OYMIQUY7QOBJGX36TEJS35ZEQT24QPEMSNZGTFESWMRW6CSXBKQ"
	tests := []struct {
		name string
		in   string
		msg  string
	}{
		{"empty", "", "must be 212 bytes, got 0"},
		{"trailing newline", golden + "\n", "got 213"},
		{"padded base32", golden + "====", "got 216"},
		{"lowercase prefix", replace("BPC1", "bpc1"), `must start with "BPC1"`},
		{"other version", replace("BPC1", "BPC2"), `must start with "BPC1"`},
		{"segments swapped", replace("|ph="+ph, "|rh="+ph), `segment 2 must start with "|ph="`},
		{"uppercase key", replace("|pv=", "|PV="), `segment 1 must start with "|pv="`},
		{"other separator", replace("|rh=", ";rh="), `segment 4 must start with "|rh="`},
		{"uppercase uuid", replace(pvID, strings.ToUpper(pvID)), "pv must be a lowercase UUID"},
		{"uuid shifted dash", replace("6f1c2d3e-4b5a", "6f1c2d3e4-b5a"), "pv must be a lowercase UUID"},
		{"lowercase base32", replace(ph, strings.ToLower(ph)), "ph is not unpadded upper-case base32"},
		{"hex digit 1 in base32", replace(ph, "1"+ph[1:]), "ph is not unpadded upper-case base32"},
		{"nonzero trailing bits", replace(rh, rh[:51]+"R"), "rh is not the canonical base32 of a 32-byte hash"},
		{"pipe inside hash", replace(ph, ph[:51]+"|"), "ph is not unpadded upper-case base32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			requireRefused(t, tt.in, tt.msg)
		})
	}
}

// decodeQR reads a PNG with an independent decoder (gozxing, a port of ZXing).
func decodeQR(t testing.TB, pngBytes []byte) *gozxing.Result {
	t.Helper()
	img, format, err := image.Decode(bytes.NewReader(pngBytes))
	require.NoError(t, err)
	require.Equal(t, "png", format)
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	require.NoError(t, err)
	result, err := zxqrcode.NewQRCodeReader().Decode(bmp, nil)
	require.NoError(t, err)
	return result
}

func TestPNGDecodesToExactPayload(t *testing.T) {
	t.Parallel()
	tests := roundTripFields()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			payload, err := payloadOf(tt.in)
			require.NoError(t, err)
			pngBytes, err := qr.PNG(payload)
			require.NoError(t, err)

			cfg, err := png.DecodeConfig(bytes.NewReader(pngBytes))
			require.NoError(t, err)
			require.Equal(t, qr.ImageSize, cfg.Width)
			require.Equal(t, qr.ImageSize, cfg.Height)
			require.Equal(t, 520, qr.ImageSize)

			result := decodeQR(t, pngBytes)
			require.Equal(t, gozxing.BarcodeFormat_QR_CODE, result.GetBarcodeFormat())
			require.Equal(t, payload, result.GetText())
			require.Equal(t, "M", result.GetResultMetadata()[gozxing.ResultMetadataType_ERROR_CORRECTION_LEVEL])

			fields, err := qr.Parse(result.GetText())
			require.NoError(t, err)
			require.Equal(t, tt.in, fields)
		})
	}
}

func TestPNGIsDeterministicAndKeepsQuietZone(t *testing.T) {
	t.Parallel()
	first, err := qr.PNG(golden)
	require.NoError(t, err)
	second, err := qr.PNG(golden)
	require.NoError(t, err)
	require.Equal(t, first, second, "same payload, byte-identical PNG")

	img, err := png.Decode(bytes.NewReader(first))
	require.NoError(t, err)
	quiet := 4 * qr.ModulePixels
	for _, p := range []image.Point{{0, 0}, {quiet - 1, quiet - 1}, {qr.ImageSize - 1, qr.ImageSize - 1}, {quiet - 1, qr.ImageSize / 2}} {
		r, g, b, _ := img.At(p.X, p.Y).RGBA()
		require.Equal(t, [3]uint32{0xffff, 0xffff, 0xffff}, [3]uint32{r, g, b}, "quiet zone pixel %v is white", p)
	}
	// The top-left finder pattern starts right after the quiet zone.
	r, g, b, _ := img.At(quiet, quiet).RGBA()
	require.Equal(t, [3]uint32{0, 0, 0}, [3]uint32{r, g, b})

	other, err := payloadOf(qr.Fields{PassportVersionID: pvID, PayloadHash: payloadHash, ProofRootHash: proofRoot, ReceiptHash: payloadHash})
	require.NoError(t, err)
	third, err := qr.PNG(other)
	require.NoError(t, err)
	require.NotEqual(t, first, third)
}

// The PNG bytes are part of what a passport version stores and what the
// verifier compares: a change of the encoding shows here first.
const (
	goldenPNGSHA256 = "05a0e8a3fc1465e2540776af4c319dd66d0335f3871e66f600e41b57bcae68f0"
	// earlierPNGSHA256 is the rendering of golden before the deflate level
	// changed: go-qrcode's own PNG encoding.
	earlierPNGSHA256 = "5e4a11e6c009b3be8532917b0e65745cf7eb2e990b3e4d1dbfdbf82c1baa1c3d"
)

func TestPNGGoldenAndEarlierRenderingStillRecognised(t *testing.T) {
	t.Parallel()
	current, err := qr.PNG(golden)
	require.NoError(t, err)
	require.Equal(t, goldenPNGSHA256, hash.SHA256Hex(current))
	code, err := qrcode.NewWithForcedVersion(golden, qr.Version, qrcode.Medium)
	require.NoError(t, err)
	earlier, err := code.PNG(qr.ImageSize)
	require.NoError(t, err)
	require.Equal(t, earlierPNGSHA256, hash.SHA256Hex(earlier))

	// Both encode the same image.
	a, err := png.Decode(bytes.NewReader(current))
	require.NoError(t, err)
	b, err := png.Decode(bytes.NewReader(earlier))
	require.NoError(t, err)
	require.Equal(t, a, b)

	for _, img := range [][]byte{current, earlier} {
		ok, err := qr.IsRendering(golden, img)
		require.NoError(t, err)
		require.True(t, ok)
	}
	other, err := payloadOf(qr.Fields{PassportVersionID: pvID, PayloadHash: payloadHash, ProofRootHash: proofRoot, ReceiptHash: payloadHash})
	require.NoError(t, err)
	for _, img := range [][]byte{current, earlier, current[:len(current)-1], nil} {
		ok, err := qr.IsRendering(other, img)
		require.NoError(t, err)
		require.False(t, ok, "another payload's image")
	}
	ok, err := qr.IsRendering(strings.ToLower(golden), current)
	require.False(t, ok)
	require.Equal(t, errcode.Validation, errcode.CodeOf(err))
}

// PNG writes its bytes itself; they are image/png's for go-qrcode's image,
// at deflate level 6 now and 9 before.
func TestPNGIsImagePNGsEncodingOfTheCode(t *testing.T) {
	t.Parallel()
	payloads := []string{golden}
	for _, tt := range roundTripFields() {
		p, err := payloadOf(tt.in)
		require.NoError(t, err)
		payloads = append(payloads, p)
	}
	for _, p := range payloads {
		code, err := qrcode.NewWithForcedVersion(p, qr.Version, qrcode.Medium)
		require.NoError(t, err)
		var want bytes.Buffer
		require.NoError(t, (&png.Encoder{CompressionLevel: png.DefaultCompression}).Encode(&want, code.Image(qr.ImageSize)))
		got, err := qr.PNG(p)
		require.NoError(t, err)
		require.Equal(t, want.Bytes(), got, p)

		earlier, err := code.PNG(qr.ImageSize) // level 9
		require.NoError(t, err)
		ok, err := qr.IsRendering(p, earlier)
		require.NoError(t, err)
		require.True(t, ok, p)
	}
}

func TestPNGRejectsNonPayload(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "https://example.com", strings.ToLower(golden)} {
		got, err := qr.PNG(in)
		require.Nil(t, got)
		require.Equal(t, errcode.Validation, errcode.CodeOf(err))
	}
}

func FuzzParse(f *testing.F) {
	f.Add(golden)
	f.Add("")
	f.Add("BPC1|pv=|ph=|pr=|rh=")
	f.Add(strings.Replace(golden, "BPC1", "bpc1", 1))
	f.Add(golden[:len(golden)-1] + "R")
	f.Add(strings.Repeat("|", qr.PayloadLen))
	f.Add(goldenLink)
	f.Add("https://a/p/" + pvID + "?ph=&pr=&rh=")
	f.Add(strings.Replace(goldenLink, "https://passports.example.com", "https://passports.example.com/", 1))
	f.Add("http://[::1]:8080/x" + goldenLink[len("https://passports.example.com"):])
	f.Fuzz(func(t *testing.T, s string) {
		fields, err := qr.Parse(s)
		if err != nil {
			require.Equal(t, errcode.Validation, errcode.CodeOf(err))
			return
		}
		again, err := qr.Encode(fields)
		require.NoError(t, err)
		require.Equal(t, s, again, "whatever parses re-encodes to the same string")
	})
}

func BenchmarkPNG(b *testing.B) {
	for b.Loop() {
		if _, err := qr.PNG(golden); err != nil {
			b.Fatal(err)
		}
	}
}

// requireRefused requires Parse to refuse in with a VALIDATION_ERROR naming
// qr_payload whose message holds msg, and to return no fields.
func requireRefused(t *testing.T, in, msg string) {
	t.Helper()
	got, err := qr.Parse(in)
	require.Equal(t, qr.Fields{}, got)
	e := errcode.As(err)
	require.NotNil(t, e, "error %v", err)
	require.Equal(t, errcode.Validation, e.Code)
	require.Equal(t, "qr_payload", e.Field)
	require.Contains(t, e.Error(), msg)
}

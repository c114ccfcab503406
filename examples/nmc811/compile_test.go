package nmc811_test

import (
	"bytes"
	"image"
	_ "image/png"
	"testing"
	"time"

	"github.com/makiuchi-d/gozxing"
	gozxingqr "github.com/makiuchi-d/gozxing/qrcode"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/compiler"
	"github.com/bpc-platform/bpc/core/qr"
	"github.com/bpc-platform/bpc/examples/nmc811"
)

func sampleInput(tb testing.TB) compiler.Input {
	facts, err := nmc811.Facts()
	require.NoError(tb, err)
	return compiler.Input{
		TenantID:             "00000000-0000-0000-0000-00000000de00",
		PassportVersionID:    "0b7e4c2a-9d1f-4a3b-8c5d-6e7f8a9b0c1d",
		PassportID:           "3c9d8e7f-6a5b-4c3d-9e2f-1a0b9c8d7e6f",
		BatteryProductID:     "a1b2c3d4-e5f6-4789-8abc-def012345678",
		SnapshotID:           "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9",
		RulePackageVersionID: "d4c3b2a1-0f9e-4d8c-b7a6-958473625140",
		Facts:                facts,
		DSLSource:            nmc811.Rules(),
		TestsSource:          nmc811.Tests(),
		CompilerBuildID:      "bpc-sample",
		SigningKeyID:         "dev-key-1",
		IssuedAt:             time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC),
	}
}

// The compiled sample: deterministic, its proof verifies, and its QR code
// decodes (with an independent decoder) to the exact BPC-QR-1 string.
func TestCompileSampleAndScanItsQRCode(t *testing.T) {
	t.Parallel()
	out, err := compiler.CompilePassport(sampleInput(t))
	require.NoError(t, err)
	again, err := compiler.CompilePassport(sampleInput(t))
	require.NoError(t, err)
	require.Equal(t, out.Payload, again.Payload)
	require.Equal(t, out.Proof, again.Proof)
	require.Equal(t, out.Receipt, again.Receipt)
	require.NoError(t, compiler.VerifyProof(out.Proof))

	payload, err := qr.Payload(sampleInput(t).PassportVersionID, out.PayloadHash, out.ProofRootHash, out.ReceiptHash)
	require.NoError(t, err)
	png, err := qr.PNG(payload)
	require.NoError(t, err)
	img, _, err := image.Decode(bytes.NewReader(png))
	require.NoError(t, err)
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	require.NoError(t, err)
	res, err := gozxingqr.NewQRCodeReader().Decode(bmp, nil)
	require.NoError(t, err)
	require.Equal(t, payload, res.GetText())
	fields, err := qr.Parse(res.GetText())
	require.NoError(t, err)
	require.Equal(t, out.PayloadHash, fields.PayloadHash)
}

func BenchmarkCompileSample(b *testing.B) {
	in := sampleInput(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := compiler.CompilePassport(in); err != nil {
			b.Fatal(err)
		}
	}
}

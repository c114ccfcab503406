package passport_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/qr"
	"github.com/bpc-platform/bpc/passport"
)

func TestRenderQRIsTheLinkUnderTheBase(t *testing.T) {
	t.Parallel()
	v := bpctype.PassportVersion{PassportVersionID: uuid.MustParse("6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f"),
		PayloadHash:   "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862",
		ProofRootHash: "43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777",
		ReceiptHash:   "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}
	code, err := passport.RenderQR("https://passports.example.com", v)
	require.NoError(t, err)
	f, err := qr.Parse(code.Payload)
	require.NoError(t, err)
	require.Equal(t, qr.Fields{Format: qr.FormatQR2, BaseURL: "https://passports.example.com",
		PassportVersionID: v.PassportVersionID.String(), PayloadHash: v.PayloadHash, ProofRootHash: v.ProofRootHash,
		ReceiptHash: v.ReceiptHash}, f)
	ok, err := qr.IsRendering(code.Payload, code.PNG)
	require.NoError(t, err)
	require.True(t, ok)

	_, err = passport.RenderQR("", v)
	require.Equal(t, errcode.ConfigMissing, errcode.CodeOf(err))
	_, err = passport.RenderQR("https://passports.example.com/", v)
	require.Equal(t, "base_url", errcode.As(err).Field)
}

package passport_test

import (
	"crypto/ed25519"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/core/verify"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// An export file is what a third party verifies offline: core/verify reads
// it back and every check passes, with the signer's key as the trusted one.
func TestExportVerifiesOffline(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.compile(t, 601)
	id := c.version.PassportVersionID
	signer := testSigner(t)
	e.sign(t, signer, id)
	v, err := e.Store.GetPassportVersion(e.Ctx, store.DevTenantID, id)
	require.NoError(t, err)
	code, err := passport.RenderQR(v)
	require.NoError(t, err)
	require.NoError(t, e.run(t, func(tx passport.Tx) error {
		if err := passport.RecordQR(e.Ctx, tx, store.DevTenantID, id, code); err != nil {
			return err
		}
		_, err := passport.ActivatePassportVersion(e.Ctx, tx, store.DevTenantID, id)
		return err
	}))

	f, err := passport.WriteExport(e.Ctx, e.Store, t.TempDir(), store.DevTenantID, id, jobargs.ExportFormatJSON)
	require.NoError(t, err)
	b, err := os.ReadFile(f.Path)
	require.NoError(t, err)
	require.Equal(t, f.SHA256, hash.SHA256Hex(b))
	require.Equal(t, f.SizeBytes, int64(len(b)))

	a, want, err := verify.ReadExport(b)
	require.NoError(t, err)
	require.Equal(t, id.String(), want.PassportVersionID)
	require.Equal(t, c.out.PayloadHash, want.PayloadHash)
	key, err := signer.Key()
	require.NoError(t, err)
	want.SigningKeyID, want.PublicKey = signer.KeyID, key.Public().(ed25519.PublicKey)
	rep, err := verify.Verify(a, want)
	require.NoError(t, err)
	require.True(t, rep.OK())
	for _, check := range []string{verify.CheckQRPayload, verify.CheckReceipt, verify.CheckProof, verify.CheckVersion,
		verify.CheckPayloadHash, verify.CheckProofRoot, verify.CheckReceiptHash, verify.CheckSigningKey, verify.CheckSignature} {
		require.True(t, rep.Passed(check), check)
	}

	// One byte of the exported payload changed does not verify.
	a.Payload = slices.Clone(a.Payload)
	a.Payload[len(a.Payload)/2] ^= 0x01
	rep, err = verify.Verify(a, want)
	require.Error(t, err)
	require.False(t, rep.Passed(verify.CheckPayloadHash))
}

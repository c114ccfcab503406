package passport_test

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/core/verify"
	"github.com/bpc-platform/bpc/examples/nmc811"
	"github.com/bpc-platform/bpc/internal/passportpdf"
	"github.com/bpc-platform/bpc/internal/pdftest"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// An export file is what a third party verifies offline: core/verify reads
// it back and every check passes, with the signer's key as the trusted one.
func TestExportVerifiesOffline(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c, signer := e.active(t, 601)
	id := c.version.PassportVersionID

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

// active compiles, signs (with the signer returned), gives a QR code and
// activates a version, as the pipeline and the admin API do.
func (e env) active(t *testing.T, jobID int64) (compiled, *passport.Signer) {
	t.Helper()
	c := e.compile(t, jobID)
	id := c.version.PassportVersionID
	signer := testSigner(t)
	e.sign(t, signer, id)
	v, err := e.Store.GetPassportVersion(e.Ctx, store.DevTenantID, id)
	require.NoError(t, err)
	code, err := passport.RenderQR("https://passports.example.com", v)
	require.NoError(t, err)
	require.NoError(t, e.run(t, func(tx passport.Tx) error {
		if err := passport.RecordQR(e.Ctx, tx, store.DevTenantID, id, code); err != nil {
			return err
		}
		_, err := passport.ActivatePassportVersion(e.Ctx, tx, store.DevTenantID, id)
		return err
	}))
	return c, signer
}

// The PDF export of an ACTIVE version: the product and the stored hashes,
// key id and signature in its text, the stored QR image decoding to the
// stored QR payload, and the same bytes each time it is written.
func TestPDFExport(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c, _ := e.active(t, 602)
	id := c.version.PassportVersionID
	v, err := e.Store.GetPassportVersion(e.Ctx, store.DevTenantID, id)
	require.NoError(t, err)

	dir := t.TempDir()
	f, err := passport.WriteExport(e.Ctx, e.Store, dir, store.DevTenantID, id, "pdf")
	require.NoError(t, err)
	require.Equal(t, jobargs.ExportFormatPDF, f.Format)
	require.Equal(t, filepath.Join(dir, store.DevTenantID.String(), id.String()+".pdf"), f.Path)
	b, err := os.ReadFile(f.Path)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(b, []byte("%PDF-")))
	require.Equal(t, f.SHA256, hash.SHA256Hex(b))
	require.Equal(t, f.SizeBytes, int64(len(b)))

	words := pdftest.Words(t, f.Path)
	for _, whole := range []string{id.String(), v.PayloadHash, v.ProofRootHash, v.ReceiptHash, v.SigningKeyID, *v.Signature,
		*v.SigningPublicKey, nmc811.BatterySKU} {
		require.True(t, words[whole], "pdftotext finds %s whole", whole)
	}
	require.Contains(t, pdftest.Text(t, f.Path), c.product.Name)
	require.Equal(t, []string{*v.QRPayload}, pdftest.ImageQR(t, f.Path), "the stored QR image, extracted")
	require.Equal(t, *v.QRPayload, pdftest.PageQR(t, f.Path, 1), "and as the first page prints")

	again, err := passport.WriteExport(e.Ctx, e.Store, dir, store.DevTenantID, id, "PDF")
	require.NoError(t, err)
	require.Equal(t, f, again, "the same bytes again")

	art, err := e.Store.LoadPassportArtifacts(e.Ctx, store.DevTenantID, id)
	require.NoError(t, err)
	p, err := passport.PDFPassport(v, art, c.product)
	require.NoError(t, err)
	require.True(t, v.IssuedAt.Equal(p.IssuedAt), "the PDF's date is the version's issued_at")
	want, err := passportpdf.Render(p)
	require.NoError(t, err)
	require.Equal(t, want, b)

	_, err = passport.WriteExport(e.Ctx, e.Store, dir, store.DevTenantID, id, "DOCX")
	require.Equal(t, errcode.UnsupportedFormat, errcode.CodeOf(err))
}

// An export's path is shown relative to the export directory, and an
// export that cannot be written says so without the server's directory
// (the job's last error is the tenant's to read).
func TestExportPathsHideTheExportDir(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c, _ := e.active(t, 603)
	id := c.version.PassportVersionID

	dir := t.TempDir()
	f, err := passport.WriteExport(e.Ctx, e.Store, dir, store.DevTenantID, id, "json")
	require.NoError(t, err)
	require.Equal(t, store.DevTenantID.String()+"/"+id.String()+".json", f.RelPath())
	require.Equal(t, f.RelPath(), passport.ExportRelPath(bpctype.PassportExport{TenantID: f.TenantID, Path: f.Path}))

	// The tenant's directory is a file: mkdir fails.
	blocked := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(blocked, store.DevTenantID.String()), []byte("x"), 0o600))
	_, err = passport.WriteExport(e.Ctx, e.Store, blocked, store.DevTenantID, id, "json")
	require.Error(t, err)
	ee := errcode.As(err)
	require.NotNil(t, ee)
	require.Equal(t, errcode.IOError, ee.Code)
	require.NotContains(t, ee.Message, blocked)
	require.NotContains(t, errcode.Encode(err), blocked, "the job's stored error")
	require.Contains(t, ee.Message, "$BPC_EXPORT_DIR/"+store.DevTenantID.String())
	require.ErrorContains(t, err, "IO_ERROR")
}

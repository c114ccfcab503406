package verify

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/qr"
)

// withLink gives s the BPC-QR-2 link of its version under base, and its image.
func withLink(t *testing.T, s sample, base string) sample {
	t.Helper()
	link, err := qr.Link(base, s.want.PassportVersionID, s.out.PayloadHash, s.out.ProofRootHash, s.out.ReceiptHash)
	require.NoError(t, err)
	s.a.QRPayload = link
	s.a.QRPNG, err = qr.PNG(link)
	require.NoError(t, err)
	return s
}

func checkNamed(t *testing.T, rep Report, name string) Check {
	t.Helper()
	for _, c := range rep.Checks {
		if c.Name == name {
			return c
		}
	}
	require.Failf(t, "no check", "%s", name)
	return Check{}
}

// Both formats verify, and the "qr payload" check says which it read.
func TestVerifyAcceptsBothQRFormats(t *testing.T) {
	t.Parallel()
	one := newSample(t)
	rep, err := Verify(one.a, one.want)
	require.NoError(t, err)
	require.Equal(t, "BPC-QR-1, 212 bytes", checkNamed(t, rep, CheckQRPayload).Detail)

	two := withLink(t, one, "https://passports.example.com")
	rep, err = Verify(two.a, two.want)
	require.NoError(t, err)
	require.Equal(t, allChecks, names(rep.Checks))
	require.Equal(t, "BPC-QR-2 link, 236 bytes, to https://passports.example.com/p/…", checkNamed(t, rep, CheckQRPayload).Detail)

	// Each of the link's hashes is compared as BPC-QR-1's are.
	f, err := qr.Parse(two.a.QRPayload)
	require.NoError(t, err)
	for _, tc := range []struct {
		set    func(*qr.Fields)
		failed string
	}{
		{func(f *qr.Fields) { f.PayloadHash = strings.Repeat("0", 64) }, CheckPayloadHash},
		{func(f *qr.Fields) { f.ProofRootHash = strings.Repeat("0", 64) }, CheckProofRoot},
		{func(f *qr.Fields) { f.ReceiptHash = strings.Repeat("0", 64) }, CheckReceiptHash},
		{func(f *qr.Fields) { f.PassportVersionID = "00000000-0000-0000-0000-000000000000" }, CheckVersion},
	} {
		g := f
		tc.set(&g)
		a := two.a
		a.QRPayload, err = qr.Encode(g)
		require.NoError(t, err)
		a.QRPNG = nil
		rep, err := Verify(a, two.want)
		require.Error(t, err)
		require.Equal(t, []string{tc.failed}, rep.FailedNames())
		require.Contains(t, checkNamed(t, rep, tc.failed).Detail, "but the QR payload says")
	}

	// The image must be the link's: the BPC-QR-1 image of the same
	// hashes is not.
	a := two.a
	a.QRPNG = one.a.QRPNG
	rep, err = Verify(a, two.want)
	require.Error(t, err)
	require.Equal(t, []string{CheckQRPNG}, rep.FailedNames())
	require.Contains(t, checkNamed(t, rep, CheckQRPNG).Detail, "is not the BPC-QR-2 rendering")

	// A link with a trailing slash in its base is not a BPC-QR-2 link.
	a = two.a
	a.QRPayload = strings.Replace(a.QRPayload, ".com/p/", ".com//p/", 1)
	rep, err = Verify(a, two.want)
	require.Error(t, err)
	require.Equal(t, []string{CheckQRPayload}, rep.FailedNames())
}

func TestReadExportWithALinkVerifies(t *testing.T) {
	t.Parallel()
	s := withLink(t, newSample(t), "http://localhost:8080")
	a, want, err := ReadExport(exportOf(t, s))
	require.NoError(t, err)
	require.Equal(t, s.a.QRPayload, a.QRPayload)
	rep, err := Verify(a, want)
	require.NoError(t, err)
	require.Contains(t, checkNamed(t, rep, CheckQRPayload).Detail, "BPC-QR-2 link")
}

package verify

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/sign"
)

// exportOf lays a sample out as a BPC-EXPORT-1 file, the way the export job
// writes one (canonical, the documents embedded as their bytes).
func exportOf(t *testing.T, s sample) []byte {
	t.Helper()
	b, err := canonjson.Marshal(map[string]any{
		"export_format":       ExportFormat,
		"passport_version_id": s.want.PassportVersionID,
		"passport_id":         s.out.ReceiptFields.PassportID,
		"version":             1,
		"status":              "ACTIVE",
		"payload":             json.RawMessage(s.a.Payload),
		"proof":               json.RawMessage(s.a.Proof),
		"receipt":             json.RawMessage(s.a.Receipt),
		"hashes": map[string]any{
			"payload_sha256":  s.out.PayloadHash,
			"proof_root_hash": s.out.ProofRootHash,
			"receipt_hash":    s.out.ReceiptHash,
		},
		"signing_key": map[string]any{"key_id": testKeyID, "alg": "ED25519",
			"public_key_base64": sign.PublicKeyBase64(s.want.PublicKey)},
		"qr_payload": s.a.QRPayload,
	})
	require.NoError(t, err)
	return b
}

func TestReadExportVerifies(t *testing.T) {
	t.Parallel()
	s := newSample(t)
	a, want, err := ReadExport(exportOf(t, s))
	require.NoError(t, err)
	require.Equal(t, s.a.Payload, a.Payload)
	require.Equal(t, s.a.Receipt, a.Receipt)
	require.Nil(t, a.QRPNG, "an export carries no image")
	rep, err := Verify(a, want)
	require.NoError(t, err)
	require.False(t, rep.Passed(CheckQRPNG), "no image, no image check")
	require.True(t, rep.Passed(CheckSignature))
}

func TestReadExportNamesTheFailedCheck(t *testing.T) {
	t.Parallel()
	s := newSample(t)
	doc := exportOf(t, s)
	for _, tc := range []struct {
		name, from, to, failed string
	}{
		// A byte of the payload (a digit of a value) changed: its hash no longer matches.
		{"payload", `"payload":{`, `"payload":{"x":1,`, CheckPayloadHash},
		// The hashes section disagrees with the receipt it ships with.
		{"hashes", `"receipt_hash":"` + s.out.ReceiptHash[:4], `"receipt_hash":"0000`, CheckReceiptHash},
		// The receipt's signature is another valid-looking base64 string.
		{"signature", `"signature":"` + s.signed.Signature[:4], `"signature":"AAAA`, CheckSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, 1, bytes.Count(doc, []byte(tc.from)), "the fixture has one %s", tc.from)
			tampered := bytes.Replace(doc, []byte(tc.from), []byte(tc.to), 1)
			a, want, err := ReadExport(tampered)
			require.NoError(t, err)
			rep, err := Verify(a, want)
			require.Error(t, err)
			require.False(t, rep.Passed(tc.failed), "%s must fail: %v", tc.failed, err)
		})
	}
}

func TestReadExportRefusesWhatIsNotAnExport(t *testing.T) {
	t.Parallel()
	s := newSample(t)
	doc := exportOf(t, s)
	var members map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(doc, &members))
	delete(members, "receipt")
	noReceipt, err := json.Marshal(members)
	require.NoError(t, err)
	for name, b := range map[string][]byte{
		"empty":          nil,
		"not json":       []byte("PK\x03\x04"),
		"other format":   bytes.Replace(doc, []byte(ExportFormat), []byte("BPC-EXPORT-9"), 1),
		"unknown member": bytes.Replace(doc, []byte(`{"export_format"`), []byte(`{"extra":1,"export_format"`), 1),
		"no receipt":     noReceipt,
		"trailing data":  append(append([]byte{}, doc...), []byte(" {}")...),
	} {
		_, _, err := ReadExport(b)
		require.Error(t, err, name)
	}
	_, _, err = ReadExport([]byte("%PDF-1.7\n%âãÏÓ\n"))
	require.ErrorContains(t, err, "a PDF export is for people", "the PDF export says which file to verify instead")
}

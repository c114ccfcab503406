package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ExportFormat is the export_format of an export file.
const ExportFormat = "BPC-EXPORT-1"

// exportDocument is the JSON of a BPC-EXPORT-1 export file. Payload, proof
// and receipt are embedded as the very bytes that were hashed and signed, so
// they are read as raw JSON and never re-encoded.
type exportDocument struct {
	ExportFormat      string          `json:"export_format"`
	PassportVersionID string          `json:"passport_version_id"`
	PassportID        string          `json:"passport_id"`
	Version           int             `json:"version"`
	Status            string          `json:"status"`
	Payload           json.RawMessage `json:"payload"`
	Proof             json.RawMessage `json:"proof"`
	Receipt           json.RawMessage `json:"receipt"`
	Hashes            struct {
		PayloadSHA256 string `json:"payload_sha256"`
		ProofRootHash string `json:"proof_root_hash"`
		ReceiptHash   string `json:"receipt_hash"`
	} `json:"hashes"`
	SigningKey json.RawMessage `json:"signing_key"`
	QRPayload  string          `json:"qr_payload"`
}

// ReadExport reads a BPC-EXPORT-1 export file: the artifacts it embeds, and
// as Expect what its passport_version_id and hashes section state, so that
// Verify also checks that the file agrees with itself. An export carries no
// QR image; its signing_key is the key document. A document that is not an
// export (another format, unknown members, a missing part) is an error.
func ReadExport(b []byte) (Artifacts, Expect, error) {
	if bytes.HasPrefix(b, []byte("%PDF-")) {
		return Artifacts{}, Expect{}, fmt.Errorf("a PDF export is for people and carries no signed bytes; verify the JSON export (%s) or an artifact directory", ExportFormat)
	}
	var doc exportDocument
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return Artifacts{}, Expect{}, fmt.Errorf("not a %s export: %w", ExportFormat, err)
	}
	if len(bytes.TrimSpace(b[dec.InputOffset():])) > 0 {
		return Artifacts{}, Expect{}, errors.New("something follows the export's JSON object")
	}
	if doc.ExportFormat != ExportFormat {
		return Artifacts{}, Expect{}, fmt.Errorf("export_format is %q, want %s", doc.ExportFormat, ExportFormat)
	}
	for _, part := range []struct {
		name string
		raw  json.RawMessage
	}{{"payload", doc.Payload}, {"proof", doc.Proof}, {"receipt", doc.Receipt}, {"signing_key", doc.SigningKey}} {
		if len(part.raw) == 0 || bytes.Equal(part.raw, []byte("null")) {
			return Artifacts{}, Expect{}, fmt.Errorf("the export has no %s", part.name)
		}
	}
	a := Artifacts{
		Payload:    doc.Payload,
		Proof:      doc.Proof,
		Receipt:    doc.Receipt,
		QRPayload:  doc.QRPayload,
		SigningKey: doc.SigningKey,
	}
	want := Expect{
		PassportVersionID: doc.PassportVersionID,
		PayloadHash:       doc.Hashes.PayloadSHA256,
		ProofRootHash:     doc.Hashes.ProofRootHash,
		ReceiptHash:       doc.Hashes.ReceiptHash,
		From:              "the export's hashes",
	}
	return a, want, nil
}

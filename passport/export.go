package passport

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/core/verify"
	"github.com/bpc-platform/bpc/internal/passportpdf"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

// ExportFormat is the format name of a JSON export file, the one
// core/verify reads.
const ExportFormat = verify.ExportFormat

// ExportFile is an export written to disk, not yet recorded.
type ExportFile struct {
	TenantID          uuid.UUID
	PassportVersionID uuid.UUID
	Format            string
	// Path is where the file is on this server's disk: recorded, read
	// back by the API, never shown (RelPath is).
	Path      string
	SizeBytes int64
	SHA256    string
}

// RelPath is the file's path under the export directory, as ExportRelPath.
func (f ExportFile) RelPath() string {
	return exportRelPath(f.TenantID, f.Path)
}

// ExportRelPath is where an export file lies under BPC_EXPORT_DIR,
// <tenant>/<version>.<ext> with forward slashes: the only form of its path
// the API and a job's output show. The server's absolute path tells a
// tenant about the host (its layout, user names, mounts) and is of no use
// to it: the file is served by GET …/export-file.
func ExportRelPath(e bpctype.PassportExport) string {
	return exportRelPath(e.TenantID, e.Path)
}

func exportRelPath(tenantID uuid.UUID, path string) string {
	return tenantID.String() + "/" + filepath.Base(path)
}

// WriteExport writes an ACTIVE version to an export file under dir, at
// dir/<tenant>/<version>.json or .pdf. JSON (BPC-EXPORT-1) is the payload,
// proof and signed receipt exactly as stored, with the public key and QR
// payload: everything a third party needs to verify it offline. PDF is the
// same version for a person to read (PDFPassport, rendered by passportpdf).
// The file is written atomically (temp file, fsync, size check, rename);
// writing it again writes the same bytes.
func WriteExport(ctx context.Context, q *store.Queries, dir string, tenantID, versionID uuid.UUID, format string) (ExportFile, error) {
	format = strings.ToUpper(format)
	if format != jobargs.ExportFormatJSON && format != jobargs.ExportFormatPDF {
		return ExportFile{}, errcode.New(errcode.UnsupportedFormat, "export format %s is not one of JSON, PDF", format)
	}
	v, err := q.GetPassportVersion(ctx, tenantID, versionID)
	if err != nil {
		return ExportFile{}, err
	}
	if v.Status != bpctype.PassportActive {
		return ExportFile{}, errcode.New(errcode.InvalidState, "passport version %s is %s; only an ACTIVE version is exported", versionID, v.Status)
	}
	art, err := q.LoadPassportArtifacts(ctx, tenantID, versionID)
	if err != nil {
		return ExportFile{}, err
	}
	var doc []byte
	ext := ".json"
	if format == jobargs.ExportFormatPDF {
		ext = ".pdf"
		doc, err = exportPDF(ctx, q, v, art)
	} else {
		doc, err = ExportDocument(v, art)
	}
	if err != nil {
		return ExportFile{}, err
	}
	path := filepath.Join(dir, tenantID.String(), versionID.String()+ext)
	if err := writeFileAtomic(path, doc); err != nil {
		return ExportFile{}, hideDir(err, dir)
	}
	return ExportFile{TenantID: tenantID, PassportVersionID: versionID, Format: format, Path: path,
		SizeBytes: int64(len(doc)), SHA256: hash.SHA256Hex(doc)}, nil
}

// exportPDF renders v with its battery product as a PDF.
func exportPDF(ctx context.Context, q *store.Queries, v bpctype.PassportVersion, art bpctype.PassportArtifacts) ([]byte, error) {
	pp, err := q.GetPassport(ctx, v.TenantID, v.PassportID)
	if err != nil {
		return nil, fmt.Errorf("error loading passport %s: %w", v.PassportID, err)
	}
	product, err := q.GetBatteryProduct(ctx, v.TenantID, pp.BatteryProductID)
	if err != nil {
		return nil, fmt.Errorf("error loading battery product %s: %w", pp.BatteryProductID, err)
	}
	p, err := PDFPassport(v, art, product)
	if err != nil {
		return nil, err
	}
	b, err := passportpdf.Render(p)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "error rendering the PDF of passport version %s: %s", v.PassportVersionID, err.Error())
	}
	return b, nil
}

// PDFPassport is what the PDF export shows of a signed version with its QR
// code: the product, the stored payload, hashes, key id, public key,
// signature and QR image. Its date is the version's issued_at (the
// receipt's), so the same version renders to the same bytes.
func PDFPassport(v bpctype.PassportVersion, art bpctype.PassportArtifacts, product bpctype.BatteryProduct) (passportpdf.Passport, error) {
	if v.Signature == nil || v.SigningPublicKey == nil {
		return passportpdf.Passport{}, errcode.New(errcode.InvalidState, "passport version %s is not signed", v.PassportVersionID)
	}
	if v.QRPayload == nil || len(art.QRPNG) == 0 {
		return passportpdf.Passport{}, errcode.New(errcode.InvalidState, "passport version %s has no QR code", v.PassportVersionID)
	}
	return passportpdf.Passport{
		PassportVersionID: v.PassportVersionID.String(),
		PassportID:        v.PassportID.String(),
		Version:           int(v.Version),
		Status:            v.Status,
		IssuedAt:          v.IssuedAt,
		Product: passportpdf.Product{BatteryProductID: product.BatteryProductID.String(), SKU: product.SKU,
			Name: product.Name},
		Payload:         art.Payload,
		PayloadHash:     v.PayloadHash,
		ProofRootHash:   v.ProofRootHash,
		ReceiptHash:     v.ReceiptHash,
		SigningKeyID:    v.SigningKeyID,
		PublicKeyBase64: *v.SigningPublicKey,
		Signature:       *v.Signature,
		QRPayload:       *v.QRPayload,
		QRPNG:           art.QRPNG,
	}, nil
}

// RecordExport records an export file written by River job riverJobID and
// records passport.exported. The same job recording its export again (it
// rewrote the same file) updates the record in place and appends no second
// event.
func RecordExport(ctx context.Context, t Tx, f ExportFile, riverJobID int64) (bpctype.PassportExport, error) {
	before, err := t.Q.ListPassportExports(ctx, f.TenantID, f.PassportVersionID)
	if err != nil {
		return bpctype.PassportExport{}, err
	}
	rerun := slices.ContainsFunc(before, func(e bpctype.PassportExport) bool {
		return e.RiverJobID != nil && *e.RiverJobID == riverJobID
	})
	e, err := t.Q.RecordPassportExport(ctx, bpctype.PassportExport{
		TenantID: f.TenantID, PassportVersionID: f.PassportVersionID, Format: f.Format,
		Path: f.Path, SizeBytes: f.SizeBytes, SHA256: f.SHA256, RiverJobID: &riverJobID,
	})
	if err != nil || rerun {
		return e, err
	}
	return e, t.Event(ctx, f.TenantID, AggregatePassportVersion, f.PassportVersionID, EventExported,
		map[string]any{"format": f.Format, "sha256": f.SHA256, "size_bytes": f.SizeBytes})
}

// ExportDocument is the canonical BPC-EXPORT-1 document of a signed version:
// {export_format, passport_version_id, passport_id, version, status,
// payload, proof, receipt (signed), hashes, signing_key, qr_payload}, with
// payload, proof and receipt embedded as the very JSON that was hashed (they
// are canonical, so the embedding keeps their bytes).
func ExportDocument(v bpctype.PassportVersion, art bpctype.PassportArtifacts) ([]byte, error) {
	if v.Signature == nil || v.SigningPublicKey == nil || art.ReceiptSigned == nil {
		return nil, errcode.New(errcode.InvalidState, "passport version %s is not signed", v.PassportVersionID)
	}
	doc := map[string]any{
		"export_format":       ExportFormat,
		"passport_version_id": v.PassportVersionID.String(),
		"passport_id":         v.PassportID.String(),
		"version":             int(v.Version),
		"status":              v.Status,
		"payload":             json.RawMessage(art.Payload),
		"proof":               json.RawMessage(art.Proof),
		"receipt":             json.RawMessage(art.ReceiptSigned),
		"hashes": map[string]any{
			"payload_sha256":  v.PayloadHash,
			"proof_root_hash": v.ProofRootHash,
			"receipt_hash":    v.ReceiptHash,
		},
		"signing_key": map[string]any{"key_id": v.SigningKeyID, "alg": "ED25519", "public_key_base64": *v.SigningPublicKey},
		"qr_payload":  v.QRPayload,
	}
	b, err := canonjson.Marshal(doc)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "error encoding the export: %s", err.Error())
	}
	return b, nil
}

// hideDir removes the export directory from err's message, which becomes
// the job's last error that the tenant reads ("export mkdir
// $BPC_EXPORT_DIR/<tenant>: permission denied"); the cause keeps it for
// the log.
func hideDir(err error, dir string) error {
	e := errcode.As(err)
	if e == nil || dir == "" {
		return err
	}
	msg := strings.ReplaceAll(e.Message, filepath.Clean(dir), "$BPC_EXPORT_DIR")
	if msg == e.Message {
		return err
	}
	return errcode.Wrap(e.Code, err, "%s", msg)
}

// writeFileAtomic writes b to path through a temporary file in the same
// directory: written, synced, checked for size, renamed over path, and the
// directory synced, so a reader sees the old file or the whole new one.
func writeFileAtomic(path string, b []byte) (err error) {
	if len(b) == 0 {
		return errcode.New(errcode.Internal, "refusing to write an empty export")
	}
	ioErr := func(op string, err error) error {
		return errcode.Wrap(errcode.IOError, err, "export %s: %s", op, err.Error())
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return ioErr("mkdir", err)
	}
	tmp, err := os.CreateTemp(dir, ".export-*.tmp")
	if err != nil {
		return ioErr("create", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	// Readable by the group: exports are handed on to other processes.
	if err := tmp.Chmod(0o640); err != nil {
		_ = tmp.Close()
		return ioErr("chmod", err)
	}
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		return ioErr("write", err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return ioErr("sync", err)
	}
	if err := tmp.Close(); err != nil {
		return ioErr("close", err)
	}
	if st, err := os.Stat(tmp.Name()); err != nil || st.Size() != int64(len(b)) {
		return errcode.New(errcode.IOError, "export %s: size check failed", path)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return ioErr("rename", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

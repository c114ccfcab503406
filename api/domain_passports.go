package api

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

type createProductRequest struct {
	TenantID string `json:"tenant_id" format:"uuid"`
	SKU      string `json:"sku"`
	Name     string `json:"name"`
}

func (s *Server) handleCreateProduct(w http.ResponseWriter, r *http.Request) {
	var in createProductRequest
	tenantID, err := decodeTenantBody(r, &in, &in.TenantID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sku, err := requireName("sku", in.SKU, maxSKUChars)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	name, err := requireName("name", in.Name, maxNameChars)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.Store.CreateBatteryProduct(r.Context(), tenantID, sku, name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, p)
}

func (s *Server) handleListProducts(w http.ResponseWriter, r *http.Request) {
	serveTenantList(s, w, r, s.Store.ListBatteryProducts)
}

func (s *Server) handleGetProduct(w http.ResponseWriter, r *http.Request) {
	serveByID(s, w, r, s.Store.GetBatteryProduct)
}

type createPassportRequest struct {
	TenantID         string `json:"tenant_id" format:"uuid"`
	BatteryProductID string `json:"battery_product_id" format:"uuid"`
}

func (s *Server) handleCreatePassport(w http.ResponseWriter, r *http.Request) {
	var in createPassportRequest
	tenantID, err := decodeTenantBody(r, &in, &in.TenantID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	productID, err := parseUUID("battery_product_id", in.BatteryProductID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	// Tell an unknown tenant from an unknown product (both are the same
	// foreign key violation to the store).
	if err := s.requireTenantExists(ctx, tenantID); err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.Store.CreatePassport(ctx, tenantID, productID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, p)
}

type passportWithVersions struct {
	store.Passport
	Versions []store.PassportVersion `json:"versions"`
}

func (s *Server) handleGetPassport(w http.ResponseWriter, r *http.Request) {
	serveParent(s, w, r, s.Store.GetPassport, s.Store.ListPassportVersions, func(p store.Passport, vs []store.PassportVersion) any {
		return passportWithVersions{Passport: p, Versions: vs}
	})
}

type compileRequest struct {
	TenantID             string `json:"tenant_id" format:"uuid"`
	SnapshotID           string `json:"snapshot_id" format:"uuid"`
	RulePackageVersionID string `json:"rule_package_version_id" format:"uuid"`
}

// handleCompilePassport enqueues COMPILE_PASSPORT. The snapshot and rule
// package version are not checked here: the job fails with
// SNAPSHOT_NOT_READY or RULE_PKG_NOT_PUBLISHED (or NOT_FOUND), as specified.
func (s *Server) handleCompilePassport(w http.ResponseWriter, r *http.Request) {
	var in compileRequest
	tenantID, err := decodeTenantBody(r, &in, &in.TenantID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	passportID, err := pathUUID(r, "id")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	snapshotID, err := parseUUID("snapshot_id", in.SnapshotID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ruleVersionID, err := parseUUID("rule_package_version_id", in.RulePackageVersionID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	args := jobargs.CompilePassportArgs{Base: jobargs.Base{TenantID: tenantID},
		PassportID: passportID, SnapshotID: snapshotID, RulePackageVersionID: ruleVersionID}
	job, err := s.enqueueDomainJob(r, args, func(ctx context.Context, q *store.Queries) error {
		_, err := q.GetPassport(ctx, tenantID, passportID)
		return err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, jobResponse{Job: job})
}

func (s *Server) handleGetPassportVersion(w http.ResponseWriter, r *http.Request) {
	serveByID(s, w, r, s.Store.GetPassportVersion)
}

// artifact picks one stored artifact of a version, with its ETag hash.
type artifact func(v store.PassportVersion, a store.PassportArtifacts) (body []byte, etag string, err error)

func payloadArtifact(v store.PassportVersion, a store.PassportArtifacts) ([]byte, string, error) {
	return a.Payload, v.PayloadHash, nil
}

func proofArtifact(v store.PassportVersion, a store.PassportArtifacts) ([]byte, string, error) {
	return a.Proof, v.ProofRootHash, nil
}

// receiptArtifact serves the signed receipt once there is one, else the
// unsigned receipt (what receipt_hash is over).
func receiptArtifact(v store.PassportVersion, a store.PassportArtifacts) ([]byte, string, error) {
	if a.ReceiptSigned != nil {
		return a.ReceiptSigned, v.ReceiptHash + "-signed", nil
	}
	return a.Receipt, v.ReceiptHash, nil
}

func qrArtifact(v store.PassportVersion, a store.PassportArtifacts) ([]byte, string, error) {
	if a.QRPNG == nil {
		return nil, "", errcode.New(errcode.NotFound, "QR code not generated yet for passport version %s", v.PassportVersionID)
	}
	return a.QRPNG, hash.SHA256Hex(a.QRPNG), nil
}

// serveArtifact writes a version's stored bytes unchanged (never
// re-encoded: they are the exact bytes that were hashed).
func (s *Server) serveArtifact(contentType string, pick artifact) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tenantID, id, err := tenantAndID(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ctx := r.Context()
		v, err := s.Store.GetPassportVersion(ctx, tenantID, id)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		a, err := s.Store.LoadPassportArtifacts(ctx, tenantID, id)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		body, etag, err := pick(v, a)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeBytes(w, contentType, etag, body)
	}
}

// writeBytes writes body as is with its type, length and ETag.
func writeBytes(w http.ResponseWriter, contentType, etag string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if etag != "" {
		h.Set("ETag", `"`+etag+`"`)
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// handleActivatePassportVersion activates a SIGNED version with its QR code
// and supersedes the previous ACTIVE version, recording both events.
func (s *Server) handleActivatePassportVersion(w http.ResponseWriter, r *http.Request) {
	tenantID, id, err := bodyTenantAndID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	var v store.PassportVersion
	err = s.inTx(ctx, func(t passport.Tx) error {
		v, err = passport.ActivatePassportVersion(ctx, t, tenantID, id)
		return err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

type exportRequest struct {
	TenantID string `json:"tenant_id" format:"uuid"`
	Format   string `json:"format"`
}

// handleExportPassportVersion enqueues EXPORT_PASSPORT for an existing
// version (the job requires it ACTIVE).
func (s *Server) handleExportPassportVersion(w http.ResponseWriter, r *http.Request) {
	var in exportRequest
	tenantID, err := decodeTenantBody(r, &in, &in.TenantID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	id, err := pathUUID(r, "id")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	format, err := exportFormat("format", in.Format, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	args := jobargs.ExportPassportArgs{Base: jobargs.Base{TenantID: tenantID}, PassportVersionID: id, Format: format}
	job, err := s.enqueueDomainJob(r, args, func(ctx context.Context, q *store.Queries) error {
		_, err := q.GetPassportVersion(ctx, tenantID, id)
		return err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, jobResponse{Job: job})
}

// exportFormat upper-cases and checks an export format; optional ones
// default to JSON.
func exportFormat(field, value string, optional bool) (string, error) {
	f := strings.ToUpper(strings.TrimSpace(value))
	switch {
	case f == "" && optional:
		return jobargs.ExportFormatJSON, nil
	case f == "":
		return "", errcode.Invalid(field, "is required (JSON or PDF)")
	case f != jobargs.ExportFormatJSON && f != jobargs.ExportFormatPDF:
		return "", errcode.Invalid(field, "must be JSON or PDF, got %q", value)
	}
	return f, nil
}

func (s *Server) handleListPassportExports(w http.ResponseWriter, r *http.Request) {
	serveChildren(s, w, r, s.Store.GetPassportVersion, s.Store.ListPassportExports)
}

// handleGetExportFile serves the newest export of a format, after checking
// the file still has the SHA-256 recorded when it was written.
func (s *Server) handleGetExportFile(w http.ResponseWriter, r *http.Request) {
	tenantID, id, err := tenantAndID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	format, err := exportFormat("format", r.URL.Query().Get("format"), true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	if _, err := s.Store.GetPassportVersion(ctx, tenantID, id); err != nil {
		s.writeError(w, r, err)
		return
	}
	es, err := s.Store.ListPassportExports(ctx, tenantID, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var newest *store.PassportExport
	for i := range es { // newest first
		if es[i].Format == format {
			newest = &es[i]
			break
		}
	}
	if newest == nil {
		s.writeError(w, r, errcode.New(errcode.NotFound, "passport version %s has no %s export", id, format))
		return
	}
	body, err := os.ReadFile(newest.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.writeError(w, r, errcode.New(errcode.NotFound, "export file missing: %s export %s of passport version %s",
			format, newest.PassportExportID, id))
		return
	case err != nil:
		s.writeError(w, r, errcode.Wrap(errcode.IOError, err, "error reading export %s: %s", newest.PassportExportID, err.Error()))
		return
	}
	if sum := hash.SHA256Hex(body); sum != newest.SHA256 {
		e := errcode.New(errcode.InvalidState, "export file of %s changed since it was written: SHA-256 %s, recorded %s",
			newest.PassportExportID, sum, newest.SHA256)
		e.Details = map[string]any{"passport_export_id": newest.PassportExportID, "sha256": sum, "recorded_sha256": newest.SHA256}
		s.writeError(w, r, e)
		return
	}
	contentType := "application/json"
	if format == jobargs.ExportFormatPDF {
		contentType = "application/pdf"
	}
	writeBytes(w, contentType, newest.SHA256, body)
}

// handleReplayPassportVersion recompiles a stored version from its stored
// inputs: 200 with the report when every byte and hash matches, else 409
// REPLAY_MISMATCH carrying the report.
func (s *Server) handleReplayPassportVersion(w http.ResponseWriter, r *http.Request) {
	tenantID, id, err := bodyTenantAndID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rep, err := passport.Replay(r.Context(), s.Store, s.Config.CompileLimits, tenantID, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !rep.Match {
		e := errcode.New(errcode.ReplayMismatch, "replay of passport version %s does not match: %s", id, strings.Join(rep.Mismatches, ", "))
		e.Details = map[string]any{"mismatches": rep.Mismatches, "report": rep}
		s.writeError(w, r, e)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

type signingKeyView struct {
	KeyID           string `json:"key_id"`
	Alg             string `json:"alg"`
	PublicKeyBase64 string `json:"public_key_base64"`
}

// handleListSigningKeys lists the service-wide public keys that verify receipts.
func (s *Server) handleListSigningKeys(w http.ResponseWriter, r *http.Request) {
	keys, err := s.Store.ListSigningKeys(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	items := make([]signingKeyView, len(keys))
	for i, k := range keys {
		items[i] = signingKeyView{KeyID: k.KeyID, Alg: k.Alg, PublicKeyBase64: k.PublicKeyBase64}
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

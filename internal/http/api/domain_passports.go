package api

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
)

type createProductRequest struct {
	TenantID ID     `json:"tenant_id,omitempty" doc:"Required with the platform token; a tenant API key's own tenant when absent."`
	SKU      string `json:"sku" minLength:"1" maxLength:"100"`
	Name     string `json:"name" minLength:"1" maxLength:"200"`
}

func (s *Server) handleCreateProduct(ctx context.Context, req *bodyInput[createProductRequest]) (*out[bpctype.BatteryProduct], error) {
	in := req.Body
	tenantID, err := tenantOf(ctx, in.TenantID)
	if err != nil {
		return nil, err
	}
	sku, err := passport.CheckName("sku", in.SKU, passport.MaxSKUChars)
	if err != nil {
		return nil, err
	}
	name, err := passport.CheckName("name", in.Name, passport.MaxNameChars)
	if err != nil {
		return nil, err
	}
	return created(s.Store.CreateBatteryProduct(ctx, tenantID, sku, name))
}

func (s *Server) handleListProducts(ctx context.Context, req *tenantParam) (*out[items[bpctype.BatteryProduct]], error) {
	return listTenant(ctx, s, req, s.reads().ListBatteryProducts)
}

func (s *Server) handleGetProduct(ctx context.Context, req *idParams) (*out[bpctype.BatteryProduct], error) {
	return getByID(ctx, s, req, s.Store.GetBatteryProduct)
}

type createPassportRequest struct {
	TenantID         ID `json:"tenant_id,omitempty" doc:"Required with the platform token; a tenant API key's own tenant when absent."`
	BatteryProductID ID `json:"battery_product_id"`
}

func (s *Server) handleCreatePassport(ctx context.Context, req *bodyInput[createPassportRequest]) (*out[bpctype.Passport], error) {
	in := req.Body
	productID := in.BatteryProductID.UUID()
	tenantID, err := tenantOf(ctx, in.TenantID)
	if err != nil {
		return nil, err
	}
	// Tell an unknown tenant from an unknown product (both are the same
	// foreign key violation to the store).
	if err := s.requireTenantExists(ctx, tenantID); err != nil {
		return nil, err
	}
	return created(s.Store.CreatePassport(ctx, tenantID, productID))
}

type passportWithVersions struct {
	bpctype.Passport
	Versions []bpctype.PassportVersion `json:"versions"`
}

func (s *Server) handleGetPassport(ctx context.Context, req *idParams) (*out[passportWithVersions], error) {
	return getJoined(ctx, s, req, s.Store.GetPassport, s.Store.ListPassportVersions, func(p bpctype.Passport, vs []bpctype.PassportVersion) passportWithVersions {
		return passportWithVersions{Passport: p, Versions: vs}
	})
}

type compileRequest struct {
	TenantID             ID `json:"tenant_id,omitempty" doc:"Optional: a tenant API key's own tenant when absent (another tenant's is 403), the resource's own for the platform token."`
	SnapshotID           ID `json:"snapshot_id"`
	RulePackageVersionID ID `json:"rule_package_version_id"`
}

// handleCompilePassport enqueues COMPILE_PASSPORT. The snapshot and rule
// package version must exist in the tenant (startJob), but their states are
// the job's to check: it fails with SNAPSHOT_NOT_READY or
// RULE_PKG_NOT_PUBLISHED, as specified.
func (s *Server) handleCompilePassport(ctx context.Context, req *idKeyBody[compileRequest]) (*out[jobResponse], error) {
	in := req.Body
	tenantID, passportID, err := s.parseTenantAndID(ctx, in.TenantID, req.ID)
	if err != nil {
		return nil, err
	}
	snapshotID, ruleVersionID := in.SnapshotID.UUID(), in.RulePackageVersionID.UUID()
	args := jobargs.CompilePassportArgs{Base: jobargs.Base{TenantID: tenantID},
		PassportID: passportID, SnapshotID: snapshotID, RulePackageVersionID: ruleVersionID}
	return s.startJob(ctx, req.IdempotencyKey, args, passportID)
}

func (s *Server) handleGetPassportVersion(ctx context.Context, req *idParams) (*out[bpctype.PassportVersion], error) {
	return getByID(ctx, s, req, s.Store.GetPassportVersion)
}

// artifact picks one stored artifact of a version, with its ETag hash.
type artifact func(v bpctype.PassportVersion, a bpctype.PassportArtifacts) (body []byte, etag string, err error)

func payloadArtifact(v bpctype.PassportVersion, a bpctype.PassportArtifacts) ([]byte, string, error) {
	return a.Payload, v.PayloadHash, nil
}

func proofArtifact(v bpctype.PassportVersion, a bpctype.PassportArtifacts) ([]byte, string, error) {
	return a.Proof, v.ProofRootHash, nil
}

// receiptArtifact serves the signed receipt once there is one, else the
// unsigned receipt (what receipt_hash is over).
func receiptArtifact(v bpctype.PassportVersion, a bpctype.PassportArtifacts) ([]byte, string, error) {
	if a.ReceiptSigned != nil {
		return a.ReceiptSigned, v.ReceiptHash + "-signed", nil
	}
	return a.Receipt, v.ReceiptHash, nil
}

func qrArtifact(v bpctype.PassportVersion, a bpctype.PassportArtifacts) ([]byte, string, error) {
	if a.QRPNG == nil {
		return nil, "", errcode.New(errcode.NotFound, "QR code not generated yet for passport version %s", v.PassportVersionID)
	}
	return a.QRPNG, hash.SHA256Hex(a.QRPNG), nil
}

// artifactHandler serves a version's stored bytes unchanged (never
// re-encoded: they are the exact bytes that were hashed).
func (s *Server) artifactHandler(contentType string, pick artifact) func(context.Context, *idParams) (*bytesOutput, error) {
	return func(ctx context.Context, req *idParams) (*bytesOutput, error) {
		v, a, err := getBoth(ctx, s, req, s.Store.GetPassportVersion, s.Store.LoadPassportArtifacts)
		if err != nil {
			return nil, err
		}
		body, etag, err := pick(v, a)
		if err != nil {
			return nil, err
		}
		return bytesReply(contentType, etag, body)
	}
}

// bytesOutput is a body written as is, with its type, length and ETag.
type bytesOutput struct {
	ContentType   string `header:"Content-Type" hidden:"true"`
	ContentLength string `header:"Content-Length" hidden:"true"`
	ETag          string `header:"ETag" doc:"The artifact's hash."`
	Body          []byte
}

// bytesReply answers body as is with its type, length and ETag.
func bytesReply(contentType, etag string, body []byte) (*bytesOutput, error) {
	o := &bytesOutput{ContentType: contentType, ContentLength: strconv.Itoa(len(body)), Body: body}
	if etag != "" {
		o.ETag = `"` + etag + `"`
	}
	return o, nil
}

// handleActivatePassportVersion activates a SIGNED version with its QR code
// and supersedes the previous ACTIVE version, recording both events.
func (s *Server) handleActivatePassportVersion(ctx context.Context, req *idBody[tenantRequest]) (*out[bpctype.PassportVersion], error) {
	o, err := actOnID(ctx, s, req, passport.ActivatePassportVersion)
	if err == nil {
		// The superseded version's answers say so from now on.
		s.publicChanged(o.Body.TenantID, nil)
	}
	return o, err
}

type exportRequest struct {
	TenantID ID     `json:"tenant_id,omitempty" doc:"Optional: a tenant API key's own tenant when absent (another tenant's is 403), the resource's own for the platform token."`
	Format   string `json:"format" enum:"JSON,PDF,json,pdf" doc:"JSON (BPC-EXPORT-1, what bpc verify reads) or PDF (for people; same bytes for the same version)."`
}

// handleExportPassportVersion enqueues EXPORT_PASSPORT for an existing
// version (the job requires it ACTIVE).
func (s *Server) handleExportPassportVersion(ctx context.Context, req *idKeyBody[exportRequest]) (*out[jobResponse], error) {
	in := req.Body
	tenantID, id, err := s.parseTenantAndID(ctx, in.TenantID, req.ID)
	if err != nil {
		return nil, err
	}
	format, err := exportFormat("format", in.Format, false)
	if err != nil {
		return nil, err
	}
	args := jobargs.ExportPassportArgs{Base: jobargs.Base{TenantID: tenantID}, PassportVersionID: id, Format: format}
	return s.startJob(ctx, req.IdempotencyKey, args, id)
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

func (s *Server) handleListPassportExports(ctx context.Context, req *idParams) (*out[items[bpctype.PassportExport]], error) {
	return getJoined(ctx, s, req, s.Store.GetPassportVersion, s.Store.ListPassportExports,
		func(_ bpctype.PassportVersion, all []bpctype.PassportExport) items[bpctype.PassportExport] {
			// The path under the export directory, never the server's own.
			for i := range all {
				all[i].Path = passport.ExportRelPath(all[i])
			}
			return items[bpctype.PassportExport]{Items: all}
		})
}

// handleGetExportFile serves the newest export of a format, after checking
// the file still has the SHA-256 recorded when it was written.
func (s *Server) handleGetExportFile(ctx context.Context, req *exportFileParams) (*bytesOutput, error) {
	tenantID, id, err := s.parseTenantAndID(ctx, req.TenantID, req.ID)
	if err != nil {
		return nil, err
	}
	format, err := exportFormat("format", req.Format, true)
	if err != nil {
		return nil, err
	}
	if _, err := s.Store.GetPassportVersion(ctx, tenantID, id); err != nil {
		return nil, err
	}
	es, err := s.Store.ListPassportExports(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	var newest *bpctype.PassportExport
	for i := range es { // newest first
		if es[i].Format == format {
			newest = &es[i]
			break
		}
	}
	if newest == nil {
		return nil, errcode.New(errcode.NotFound, "passport version %s has no %s export", id, format)
	}
	body, err := os.ReadFile(newest.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errcode.New(errcode.NotFound, "export file missing: %s export %s of passport version %s",
			format, newest.PassportExportID, id)
	case err != nil:
		return nil, errcode.Wrap(errcode.IOError, err, "error reading export %s: %s", newest.PassportExportID, err.Error())
	}
	if sum := hash.SHA256Hex(body); sum != newest.SHA256 {
		e := errcode.New(errcode.InvalidState, "export file of %s changed since it was written: SHA-256 %s, recorded %s",
			newest.PassportExportID, sum, newest.SHA256)
		e.Details = map[string]any{"passport_export_id": newest.PassportExportID, "sha256": sum, "recorded_sha256": newest.SHA256}
		return nil, e
	}
	contentType := "application/json"
	if format == jobargs.ExportFormatPDF {
		contentType = "application/pdf"
	}
	return bytesReply(contentType, newest.SHA256, body)
}

// handleReplayPassportVersion recompiles a stored version from its stored
// inputs: 200 with the report when every byte and hash matches, else 409
// REPLAY_MISMATCH carrying the report.
func (s *Server) handleReplayPassportVersion(ctx context.Context, req *idBody[tenantRequest]) (*out[passport.ReplayReport], error) {
	tenantID, id, err := s.parseTenantAndID(ctx, req.Body.TenantID, req.ID)
	if err != nil {
		return nil, err
	}
	rep, err := passport.Replay(ctx, s.Store, s.Config.CompileLimits, tenantID, id)
	if err != nil {
		return nil, err
	}
	if !rep.Match {
		e := errcode.New(errcode.ReplayMismatch, "replay of passport version %s does not match: %s", id, strings.Join(rep.Mismatches, ", "))
		e.Details = map[string]any{"mismatches": rep.Mismatches, "report": rep}
		return nil, e
	}
	return reply(http.StatusOK, rep)
}

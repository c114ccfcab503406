package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

type createDocumentRequest struct {
	TenantID ID     `json:"tenant_id,omitempty" doc:"Required with the platform token; a tenant API key's own tenant when absent."`
	Kind     string `json:"kind" enum:"BOM,DUE_DILIGENCE,PCF"`
	Name     string `json:"name" minLength:"1" maxLength:"200"`
}

func (s *Server) handleCreateDocument(ctx context.Context, req *bodyInput[createDocumentRequest]) (*out[bpctype.Document], error) {
	in := req.Body
	tenantID, err := tenantOf(ctx, in.TenantID)
	if err != nil {
		return nil, err
	}
	return created(passport.CreateDocument(ctx, s.Store, tenantID, in.Kind, in.Name))
}

func (s *Server) handleListDocuments(ctx context.Context, req *tenantParam) (*out[items[bpctype.Document]], error) {
	return listTenant(ctx, s, req, s.reads().ListDocuments)
}

type documentWithVersions struct {
	bpctype.Document
	Versions []bpctype.DocumentVersion `json:"versions"`
}

func (s *Server) handleGetDocument(ctx context.Context, req *idParams) (*out[documentWithVersions], error) {
	return getJoined(ctx, s, req, s.Store.GetDocument, s.Store.ListDocumentVersions, func(d bpctype.Document, vs []bpctype.DocumentVersion) documentWithVersions {
		return documentWithVersions{Document: d, Versions: vs}
	})
}

type uploadVersionRequest struct {
	TenantID ID     `json:"tenant_id,omitempty" doc:"Optional: a tenant API key's own tenant when absent (another tenant's is 403), the resource's own for the platform token."`
	MimeType string `json:"mime_type" doc:"The content's type: application/json for the BPC document schema."`
	Content  string `json:"content" doc:"The document, as text."`
}

type uploadVersionResponse struct {
	DocumentVersion bpctype.DocumentVersion `json:"document_version"`
	Job             *bpctype.Job            `json:"job"`
}

// handleUploadDocumentVersion stores a new version and enqueues PARSE_FACTS
// in one transaction. The same bytes again return the existing version
// (200, job null): the content dedup makes the upload idempotent.
func (s *Server) handleUploadDocumentVersion(ctx context.Context, req *idBody[uploadVersionRequest]) (*out[uploadVersionResponse], error) {
	in := req.Body
	tenantID, documentID, err := s.parseTenantAndID(ctx, in.TenantID, req.ID)
	if err != nil {
		return nil, err
	}
	mimeType, err := passport.DocumentMIME(in.MimeType)
	if err != nil {
		return nil, err
	}
	content, err := passport.DocumentContent(in.Content)
	if err != nil {
		return nil, err
	}
	if err := s.checkQueueDepth(ctx, jobargs.ParseFactsArgs{}); err != nil {
		return nil, err
	}
	admitted, err := s.queued.Admit(ctx, s.Store, s.quotaDefaults(), []uuid.UUID{tenantID})
	if err != nil {
		return nil, err
	}
	up, err := inTxValue(ctx, s, func(t passport.Tx) (passport.Uploaded, error) {
		return passport.UploadDocumentVersion(ctx, t, passport.Upload{
			TenantID: tenantID, DocumentID: documentID, MimeType: mimeType, Content: content,
		})
	})
	if err != nil {
		admitted.Done(nil)
		return nil, err
	}
	// Bytes uploaded before enqueue nothing: their place is freed.
	admitted.Done([]passport.EnqueueResult{{Job: up.ParseJob.Job, Existing: up.Existed || up.ParseJob.Existing}})
	// The same bytes again answer 200 with the version and no job.
	if up.Existed {
		return reply(http.StatusOK, uploadVersionResponse{DocumentVersion: up.Version})
	}
	if !up.ParseJob.Existing {
		s.logTransition(ctx, up.ParseJob.Job, "api")
	}
	return reply(http.StatusCreated, uploadVersionResponse{DocumentVersion: up.Version, Job: &up.ParseJob.Job})
}

func (s *Server) handleGetDocumentVersion(ctx context.Context, req *idParams) (*out[bpctype.DocumentVersion], error) {
	return getByID(ctx, s, req, s.Store.GetDocumentVersion)
}

// handleListFacts lists facts, optionally of one document version and one type.
func (s *Server) handleListFacts(ctx context.Context, req *listFactsParams) (*out[items[bpctype.Fact]], error) {
	tenantID, err := tenantOf(ctx, req.TenantID)
	if err != nil {
		return nil, err
	}
	f := store.FactFilter{TenantID: tenantID, FactType: strings.TrimSpace(req.FactType),
		DocumentVersionID: req.DocumentVersionID.UUID(), Limit: req.Limit}
	if err := s.requireFactScope(ctx, tenantID, f.DocumentVersionID); err != nil {
		return nil, err
	}
	return okItems(s.reads().ListFacts(ctx, f))
}

// requireFactScope checks the tenant exists and, when given, the document
// version is the tenant's: an unknown one is 404, not an empty list.
func (s *Server) requireFactScope(ctx context.Context, tenantID, versionID uuid.UUID) error {
	if versionID != uuid.Nil {
		_, err := s.Store.GetDocumentVersion(ctx, tenantID, versionID)
		return err
	}
	return s.requireTenantExists(ctx, tenantID)
}

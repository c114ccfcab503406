package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/facts"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

type createDocumentRequest struct {
	TenantID string `json:"tenant_id" format:"uuid"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
}

func (s *Server) handleCreateDocument(w http.ResponseWriter, r *http.Request) {
	var in createDocumentRequest
	tenantID, err := decodeTenantBody(r, &in, &in.TenantID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !facts.IsKind(in.Kind) {
		s.writeError(w, r, errcode.Invalid("kind", "must be one of %s", strings.Join(facts.Kinds, ", ")))
		return
	}
	name, err := requireName("name", in.Name, maxNameChars)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	d, err := s.Store.CreateDocument(r.Context(), tenantID, in.Kind, name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, d)
}

func (s *Server) handleListDocuments(w http.ResponseWriter, r *http.Request) {
	serveTenantList(s, w, r, s.Store.ListDocuments)
}

type documentWithVersions struct {
	store.Document
	Versions []store.DocumentVersion `json:"versions"`
}

func (s *Server) handleGetDocument(w http.ResponseWriter, r *http.Request) {
	serveParent(s, w, r, s.Store.GetDocument, s.Store.ListDocumentVersions, func(d store.Document, vs []store.DocumentVersion) any {
		return documentWithVersions{Document: d, Versions: vs}
	})
}

type uploadVersionRequest struct {
	TenantID string `json:"tenant_id" format:"uuid"`
	MimeType string `json:"mime_type"`
	Content  string `json:"content"`
}

type uploadVersionResponse struct {
	DocumentVersion store.DocumentVersion `json:"document_version"`
	Job             *store.Job            `json:"job"`
}

// handleUploadDocumentVersion stores a new version and enqueues PARSE_FACTS
// in one transaction. The same bytes again return the existing version
// (200, job null): the content dedup makes the upload idempotent.
func (s *Server) handleUploadDocumentVersion(w http.ResponseWriter, r *http.Request) {
	var in uploadVersionRequest
	tenantID, err := decodeTenantBody(r, &in, &in.TenantID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	documentID, err := pathUUID(r, "id")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	mimeType, err := passport.DocumentMIME(in.MimeType)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	content, err := passport.DocumentContent(in.Content)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	if err := s.checkQueueDepth(ctx, jobargs.ParseFactsArgs{}); err != nil {
		s.writeError(w, r, err)
		return
	}
	var up passport.Uploaded
	err = s.inTx(ctx, func(t passport.Tx) error {
		up, err = passport.UploadDocumentVersion(ctx, t, passport.Upload{
			TenantID: tenantID, DocumentID: documentID, MimeType: mimeType, Content: content,
		})
		return err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// The same bytes again answer 200 with the version and no job.
	if up.Existed {
		writeJSON(w, http.StatusOK, uploadVersionResponse{DocumentVersion: up.Version})
		return
	}
	if !up.ParseJob.Existing {
		s.logTransition(ctx, up.ParseJob.Job, "api")
	}
	writeJSON(w, http.StatusCreated, uploadVersionResponse{DocumentVersion: up.Version, Job: &up.ParseJob.Job})
}

func (s *Server) handleGetDocumentVersion(w http.ResponseWriter, r *http.Request) {
	serveByID(s, w, r, s.Store.GetDocumentVersion)
}

// handleListFacts lists facts, optionally of one document version and one type.
func (s *Server) handleListFacts(w http.ResponseWriter, r *http.Request) {
	tenantID, err := queryTenant(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	f := store.FactFilter{TenantID: tenantID, FactType: strings.TrimSpace(q.Get("fact_type"))}
	if v := strings.TrimSpace(q.Get("document_version_id")); v != "" {
		if f.DocumentVersionID, err = parseUUID("document_version_id", v); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	if len(f.FactType) > 100 {
		s.writeError(w, r, errcode.Invalid("fact_type", "must be at most 100 characters"))
		return
	}
	if f.Limit, err = queryInt(r, "limit", maxFactsLimit, 1, maxFactsLimit); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	if err := s.requireFactScope(ctx, tenantID, f.DocumentVersionID); err != nil {
		s.writeError(w, r, err)
		return
	}
	fs, err := s.Store.ListFacts(ctx, f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": fs})
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

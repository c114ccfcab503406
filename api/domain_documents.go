package api

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/facts"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

// Audit events of documents.
const (
	aggregateDocumentVersion = "DocumentVersion"
	eventDocumentUploaded    = "document.uploaded"
)

// mimeJSON is the one document type PARSE_FACTS reads.
const mimeJSON = "application/json"

type createDocumentRequest struct {
	TenantID string `json:"tenant_id"`
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
	d, err := s.Store.CreateDocument(r.Context(), s.Store.Pool, tenantID, in.Kind, name)
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
	TenantID string `json:"tenant_id"`
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
	mimeType := strings.ToLower(strings.TrimSpace(in.MimeType))
	if i := strings.IndexByte(mimeType, ';'); i >= 0 { // "application/json; charset=utf-8"
		mimeType = strings.TrimSpace(mimeType[:i])
	}
	switch {
	case mimeType == "":
		s.writeError(w, r, errcode.Invalid("mime_type", "is required (%s)", mimeJSON))
		return
	case mimeType != mimeJSON:
		e := errcode.New(errcode.UnsupportedFormat, "mime_type: %q is not supported; documents are %s", in.MimeType, mimeJSON)
		e.Field = "mime_type"
		e.Details = map[string]any{"field": "mime_type", "supported": []string{mimeJSON}}
		s.writeError(w, r, e)
		return
	}
	if in.Content == "" {
		s.writeError(w, r, errcode.Invalid("content", "is required: the document bytes in standard base64"))
		return
	}
	content, err := base64.StdEncoding.DecodeString(in.Content)
	if err != nil {
		s.writeError(w, r, errcode.Invalid("content", "must be standard base64 (RFC 4648 §4, with padding)"))
		return
	}
	if len(content) == 0 {
		s.writeError(w, r, errcode.Invalid("content", "must not be empty"))
		return
	}
	ctx := r.Context()
	if err := s.checkQueueDepth(ctx, jobargs.ParseFactsArgs{}); err != nil {
		s.writeError(w, r, err)
		return
	}
	var out uploadVersionResponse
	err = s.Store.InTx(ctx, func(tx pgx.Tx) error {
		v, existed, err := s.Store.CreateDocumentVersion(ctx, tx, tenantID, documentID, mimeType, content)
		if err != nil {
			return err
		}
		out = uploadVersionResponse{DocumentVersion: v}
		if existed {
			return nil
		}
		if err := s.appendDomainEvent(ctx, tx, tenantID, aggregateDocumentVersion, v.DocumentVersionID, eventDocumentUploaded,
			map[string]any{"content_sha256": v.ContentSHA256, "size_bytes": v.SizeBytes}); err != nil {
			return err
		}
		job, err := s.Store.EnqueueArgs(ctx, tx, s.River,
			jobargs.ParseFactsArgs{Base: jobargs.Base{TenantID: tenantID}, DocumentVersionID: v.DocumentVersionID}, "")
		if err != nil {
			return enqueueError(err, jobargs.KindParseFacts)
		}
		out.Job = &job
		return nil
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if out.Job == nil {
		writeJSON(w, http.StatusOK, out)
		return
	}
	s.logTransition(ctx, *out.Job, "api")
	writeJSON(w, http.StatusCreated, out)
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
	fs, err := s.Store.ListFacts(ctx, s.Store.Pool, f)
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
		_, err := s.Store.GetDocumentVersion(ctx, s.Store.Pool, tenantID, versionID)
		return err
	}
	return s.requireTenantExists(ctx, tenantID)
}

package jobargs

import (
	"encoding/base64"
	"mime"
	"strings"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/bpc-platform/bpc/core/errcode"
)

// KindIngestDocument is the SSOT type name and River kind of IngestDocumentArgs.
const KindIngestDocument = "INGEST_DOCUMENT"

// IngestDocumentArgs stores a new version of a document.
type IngestDocumentArgs struct {
	Base
	DocumentID uuid.UUID `json:"document_id"`
	// Content is the document, base64 (standard alphabet, padded).
	Content string `json:"content,omitempty"`
	// ContentRef points at content stored elsewhere (instead of Content).
	ContentRef string `json:"content_ref,omitempty"`
	MimeType   string `json:"mime_type"`
}

// Kind returns "INGEST_DOCUMENT".
func (IngestDocumentArgs) Kind() string { return KindIngestDocument }

// InsertOpts puts the job on the QueuePipeline queue at PriorityNormal priority.
func (IngestDocumentArgs) InsertOpts() river.InsertOpts {
	return insertOpts(QueuePipeline, PriorityNormal)
}

// Validate requires tenant_id and document_id, one of content (standard
// base64) or content_ref (one line), and a media type.
func (a IngestDocumentArgs) Validate() error {
	if err := a.validate(a.Refs()); err != nil {
		return err
	}
	switch {
	case a.Content == "" && a.ContentRef == "":
		return errcode.Invalid("content", "one of content or content_ref is required")
	case a.Content != "" && a.ContentRef != "":
		return errcode.Invalid("content_ref", "give either content or content_ref, not both")
	case a.Content != "":
		if _, err := base64.StdEncoding.DecodeString(a.Content); err != nil {
			return errcode.Invalid("content", "must be standard base64")
		}
	case len(a.ContentRef) > 2048 || strings.ContainsAny(a.ContentRef, "\r\n"):
		return errcode.Invalid("content_ref", "must be one line of at most 2048 characters")
	}
	if _, _, err := mime.ParseMediaType(a.MimeType); err != nil || !strings.Contains(a.MimeType, "/") {
		return errcode.Invalid("mime_type", "must be a media type such as application/json")
	}
	return nil
}

// Refs returns the rows the payload names (document_id).
func (a IngestDocumentArgs) Refs() []Ref {
	return []Ref{
		a.ref("document_id", EntityDocument, a.DocumentID),
	}
}

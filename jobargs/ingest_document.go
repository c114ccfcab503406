package jobargs

import (
	"encoding/base64"
	"mime"
	"slices"
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
	// ContentRef is instead the path of a file under the uploads directory
	// (BPC_UPLOADS_DIR), relative to it, whose bytes are the document.
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
// base64) or content_ref (CheckContentRef), and a media type.
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
	default:
		if err := CheckContentRef(a.ContentRef); err != nil {
			return err
		}
	}
	if _, _, err := mime.ParseMediaType(a.MimeType); err != nil || !strings.Contains(a.MimeType, "/") {
		return errcode.Invalid("mime_type", "must be a media type such as application/json")
	}
	return nil
}

// CheckContentRef refuses a content_ref that cannot name a file inside the
// uploads directory, before any file is looked at: one line of at most 2048
// bytes, no NUL, a relative slash-separated path without ".." components,
// not a URL. (Reading it, the worker opens it within the directory, which
// also refuses symbolic links that lead out.)
func CheckContentRef(ref string) error {
	switch {
	case ref == "":
		return errcode.Invalid("content_ref", "is empty")
	case len(ref) > 2048 || strings.ContainsAny(ref, "\r\n"):
		return errcode.Invalid("content_ref", "must be one line of at most 2048 characters")
	case strings.ContainsRune(ref, 0):
		return errcode.Invalid("content_ref", "must not contain NUL")
	case strings.Contains(ref, "://"):
		return errcode.Invalid("content_ref", "is a path relative to the uploads directory, not a URL")
	case strings.HasPrefix(ref, "/"):
		return errcode.Invalid("content_ref", "must be relative to the uploads directory, not an absolute path")
	case slices.Contains(strings.Split(ref, "/"), ".."):
		return errcode.Invalid("content_ref", "must not contain '..'")
	}
	return nil
}

// Refs returns the rows the payload names (document_id).
func (a IngestDocumentArgs) Refs() []Ref {
	return []Ref{
		a.ref("document_id", EntityDocument, a.DocumentID),
	}
}

// Example returns a JSON document given inline.
func (IngestDocumentArgs) Example() Args {
	return &IngestDocumentArgs{DocumentID: ExampleID(1), Content: "eyJhIjoxfQ==", MimeType: "application/json"}
}

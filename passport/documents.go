package passport

import (
	"context"
	"encoding/base64"
	"strings"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/facts"
	"github.com/bpc-platform/bpc/jobargs"
)

// MIMEJSON is the one document type PARSE_FACTS reads.
const MIMEJSON = "application/json"

// DocumentMIME normalizes a document's MIME type ("Application/JSON;
// charset=utf-8" is application/json): a missing one is VALIDATION_ERROR,
// any other UNSUPPORTED_FORMAT.
func DocumentMIME(mimeType string) (string, error) {
	mt := strings.ToLower(strings.TrimSpace(mimeType))
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = strings.TrimSpace(mt[:i])
	}
	switch {
	case mt == "":
		return "", errcode.Invalid("mime_type", "is required (%s)", MIMEJSON)
	case mt != MIMEJSON:
		e := errcode.New(errcode.UnsupportedFormat, "mime_type: %q is not supported; documents are %s", mimeType, MIMEJSON)
		e.Field = "mime_type"
		e.Details = map[string]any{"field": "mime_type", "supported": []string{MIMEJSON}}
		return "", e
	}
	return mt, nil
}

// DocumentContent decodes a document's content, sent as standard base64
// with padding; empty content is refused.
func DocumentContent(b64 string) ([]byte, error) {
	if b64 == "" {
		return nil, errcode.Invalid("content", "is required: the document bytes in standard base64")
	}
	content, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, errcode.Invalid("content", "must be standard base64 (RFC 4648 §4, with padding)")
	}
	if len(content) == 0 {
		return nil, errcode.Invalid("content", "must not be empty")
	}
	return content, nil
}

// Upload is a new version of a document.
type Upload struct {
	TenantID   uuid.UUID
	DocumentID uuid.UUID
	// MimeType must be what DocumentMIME returns.
	MimeType string
	Content  []byte
}

// Uploaded is the outcome of an upload.
type Uploaded struct {
	Version bpctype.DocumentVersion
	// Existed is true when the document already had a version with these
	// bytes: the upload changed nothing.
	Existed bool
	// ParseJob is the version's PARSE_FACTS job (Existing when the upload
	// found it enqueued before).
	ParseJob EnqueueResult
}

// CheckDocumentKind refuses a document kind other than facts.Kinds.
func CheckDocumentKind(kind string) error {
	if !facts.IsKind(kind) {
		return errcode.Invalid("kind", "must be one of %s", strings.Join(facts.Kinds, ", "))
	}
	return nil
}

// CheckDocumentContent refuses an empty document and one larger than a
// document may be (facts.MaxDocumentBytes).
func CheckDocumentContent(content []byte) error {
	if len(content) == 0 {
		return errcode.Invalid("content", "must not be empty")
	}
	return facts.CheckSize(content)
}

// UploadDocumentVersion stores content as the document's next version
// (UPLOADED), records document.uploaded and enqueues its PARSE_FACTS. The
// same bytes again find the same version and the same job: the upload is
// idempotent by content.
func UploadDocumentVersion(ctx context.Context, t Tx, in Upload) (Uploaded, error) {
	if err := CheckDocumentContent(in.Content); err != nil {
		return Uploaded{}, err
	}
	v, existed, err := t.Q.CreateDocumentVersion(ctx, in.TenantID, in.DocumentID, in.MimeType, in.Content)
	if err != nil {
		return Uploaded{}, err
	}
	if !existed {
		if err := t.Event(ctx, in.TenantID, AggregateDocumentVersion, v.DocumentVersionID, EventDocumentUploaded,
			map[string]any{"content_sha256": v.ContentSHA256, "size_bytes": v.SizeBytes}); err != nil {
			return Uploaded{}, err
		}
	}
	res, err := t.Enqueue(ctx, jobargs.ParseFactsArgs{Base: jobargs.Base{TenantID: in.TenantID}, DocumentVersionID: v.DocumentVersionID},
		parseKey(v.DocumentVersionID))
	if err != nil {
		return Uploaded{}, err
	}
	return Uploaded{Version: v, Existed: existed, ParseJob: res}, nil
}

func parseKey(versionID uuid.UUID) string { return "parse:" + versionID.String() }

// ParseFacts parses an UPLOADED document version into facts and marks it
// VALIDATED, recording document.facts_parsed. A version parsed before is
// left as it is. A document the parser refuses is marked REJECTED and
// recorded as document.rejected; the parser's error is returned as
// rejected, with err nil, so that the caller commits the rejection and then
// fails (a retry cannot fix the document).
func ParseFacts(ctx context.Context, t Tx, tenantID, versionID uuid.UUID) (rejected *errcode.Error, err error) {
	v, err := t.Q.LockDocumentVersionForParse(ctx, tenantID, versionID)
	if err != nil {
		return nil, err
	}
	switch v.Version.Status {
	case bpctype.DocValidated:
		return nil, nil
	case bpctype.DocRejected:
		return errcode.New(errcode.Validation, "document version %s was rejected: %s", versionID, v.Version.Error), nil
	}
	parsed, perr := facts.Parse(v.Kind, v.Content)
	if perr != nil {
		e := errcode.As(perr)
		if e == nil || e.Code.Retryable() {
			return nil, perr
		}
		if err := t.Q.MarkDocumentVersionRejected(ctx, tenantID, versionID, e); err != nil {
			return nil, err
		}
		return e, t.Event(ctx, tenantID, AggregateDocumentVersion, versionID, EventDocumentRejected,
			map[string]any{"code": e.Code, "field": e.Field, "message": e.Message})
	}
	added, err := t.Q.InsertFacts(ctx, tenantID, versionID, parsed)
	if err != nil {
		return nil, err
	}
	if err := t.Q.MarkDocumentVersionValidated(ctx, tenantID, versionID, len(parsed)); err != nil {
		return nil, err
	}
	return nil, t.Event(ctx, tenantID, AggregateDocumentVersion, versionID, EventFactsParsed,
		map[string]any{"fact_count": len(parsed), "new_facts": added, "document_kind": v.Kind})
}

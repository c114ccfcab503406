package workers

import (
	"context"
	"encoding/base64"
	"strings"

	"github.com/riverqueue/river"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/facts"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

// IngestDocumentWorker stores a document's content as a new version
// (UPLOADED) and enqueues PARSE_FACTS, in one transaction with its
// completion. Content travels base64 in the args; content_ref (content
// stored elsewhere) is not supported by this release.
type IngestDocumentWorker struct {
	river.WorkerDefaults[jobargs.IngestDocumentArgs]
	Deps
}

// Work stores the version.
func (w *IngestDocumentWorker) Work(ctx context.Context, job *river.Job[jobargs.IngestDocumentArgs]) error {
	a := job.Args
	if err := validate(a); err != nil {
		return err
	}
	if a.ContentRef != "" {
		return errcode.New(errcode.UnsupportedFormat, "content_ref is not supported; send the content base64 in content")
	}
	if mt := strings.ToLower(strings.TrimSpace(strings.Split(a.MimeType, ";")[0])); mt != "application/json" {
		return errcode.New(errcode.UnsupportedFormat, "mime_type %q is not supported; documents are JSON (application/json)", a.MimeType)
	}
	content, err := base64.StdEncoding.DecodeString(a.Content)
	if err != nil {
		return errcode.Invalid("content", "must be standard base64")
	}
	return inTx(ctx, w.Deps, job, func(s step) (bool, error) {
		v, existed, err := s.d.Store.CreateDocumentVersion(ctx, s.tx, a.TenantID, a.DocumentID, a.MimeType, content)
		if err != nil {
			return false, err
		}
		if !existed {
			if err := s.event(ctx, a.TenantID, AggregateDocumentVersion, v.DocumentVersionID, EventDocumentUploaded,
				map[string]any{"content_sha256": v.ContentSHA256, "size_bytes": v.SizeBytes}); err != nil {
				return false, err
			}
		}
		// Keyed by the version: re-running this job finds the same version
		// and the same PARSE_FACTS job.
		next := &jobargs.ParseFactsArgs{Base: jobargs.Base{TenantID: a.TenantID}, DocumentVersionID: v.DocumentVersionID}
		return true, s.enqueue(ctx, next, "parse:"+v.DocumentVersionID.String())
	})
}

// ParseFactsWorker parses a document version into facts (canonical bytes
// and SHA-256) and marks it VALIDATED; a document the parser rejects is
// marked REJECTED with the error, and the job fails (non-retryable).
type ParseFactsWorker struct {
	river.WorkerDefaults[jobargs.ParseFactsArgs]
	Deps
}

// Work parses the version.
func (w *ParseFactsWorker) Work(ctx context.Context, job *river.Job[jobargs.ParseFactsArgs]) error {
	a := job.Args
	if err := validate(a); err != nil {
		return err
	}
	var rejected *errcode.Error
	err := inTx(ctx, w.Deps, job, func(s step) (bool, error) {
		v, err := s.d.Store.LockDocumentVersionForParse(ctx, s.tx, a.TenantID, a.DocumentVersionID)
		if err != nil {
			return false, err
		}
		switch v.Version.Status {
		case store.DocValidated:
			return true, nil // parsed before: nothing left to do
		case store.DocRejected:
			rejected = errcode.New(errcode.Validation, "document version %s was rejected: %s", a.DocumentVersionID, v.Version.Error)
			return false, nil
		}
		parsed, perr := facts.Parse(v.Kind, v.Content)
		if perr != nil {
			e := errcode.As(perr)
			if e == nil || e.Code.Retryable() {
				return false, perr
			}
			// Commit the rejection, then fail the job with the parser's error.
			if err := s.d.Store.MarkDocumentVersionRejected(ctx, s.tx, a.TenantID, a.DocumentVersionID, e); err != nil {
				return false, err
			}
			rejected = e
			return false, s.event(ctx, a.TenantID, AggregateDocumentVersion, a.DocumentVersionID, EventDocumentRejected,
				map[string]any{"code": e.Code, "field": e.Field, "message": e.Message})
		}
		added, err := s.d.Store.InsertFacts(ctx, s.tx, a.TenantID, a.DocumentVersionID, parsed)
		if err != nil {
			return false, err
		}
		if err := s.d.Store.MarkDocumentVersionValidated(ctx, s.tx, a.TenantID, a.DocumentVersionID, len(parsed)); err != nil {
			return false, err
		}
		return true, s.event(ctx, a.TenantID, AggregateDocumentVersion, a.DocumentVersionID, EventFactsParsed,
			map[string]any{"fact_count": len(parsed), "new_facts": added, "document_kind": v.Kind})
	})
	if err != nil {
		return err
	}
	if rejected != nil {
		return rejected
	}
	return nil
}

// BuildSnapshotWorker moves a BUILDING snapshot to READY (an empty one
// too); any other state fails the job with INVALID_STATE.
type BuildSnapshotWorker struct {
	river.WorkerDefaults[jobargs.BuildSnapshotArgs]
	Deps
}

// Work builds the snapshot.
func (w *BuildSnapshotWorker) Work(ctx context.Context, job *river.Job[jobargs.BuildSnapshotArgs]) error {
	a := job.Args
	if err := validate(a); err != nil {
		return err
	}
	return inTx(ctx, w.Deps, job, func(s step) (bool, error) {
		sn, err := s.d.Store.MarkSnapshotReady(ctx, s.tx, a.TenantID, a.SnapshotID)
		if err != nil {
			return false, err
		}
		return true, s.event(ctx, a.TenantID, AggregateSnapshot, a.SnapshotID, EventSnapshotReady,
			map[string]any{"item_count": sn.ItemCount})
	})
}

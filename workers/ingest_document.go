package workers

import (
	"context"

	"github.com/riverqueue/river"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
)

// IngestDocumentWorker stores a document's content as a new version
// (passport.UploadDocumentVersion), in one transaction with its completion.
// Content travels base64 in the args; content_ref (content stored
// elsewhere) is not supported by this release.
type IngestDocumentWorker struct {
	river.WorkerDefaults[jobargs.IngestDocumentArgs]
	Completer Completer
}

// Work stores the version.
func (w *IngestDocumentWorker) Work(ctx context.Context, job *river.Job[jobargs.IngestDocumentArgs]) error {
	a := job.Args
	if a.ContentRef != "" {
		return errcode.New(errcode.UnsupportedFormat, "content_ref is not supported; send the content base64 in content")
	}
	mimeType, err := passport.DocumentMIME(a.MimeType)
	if err != nil {
		return err
	}
	content, err := passport.DocumentContent(a.Content)
	if err != nil {
		return err
	}
	return completeInTx(ctx, w.Completer, job, func(t passport.Tx) error {
		_, err := passport.UploadDocumentVersion(ctx, t, passport.Upload{
			TenantID: a.TenantID, DocumentID: a.DocumentID, MimeType: mimeType, Content: content,
		})
		return err
	})
}

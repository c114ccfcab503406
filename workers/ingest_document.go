package workers

import (
	"context"

	"github.com/riverqueue/river"

	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
)

// IngestDocumentWorker stores a document's content as a new version
// (passport.UploadDocumentVersion), in one transaction with its completion.
// The content travels base64 in the args, or content_ref names a file under
// UploadsDir whose bytes are ingested the same way (passport.ReadUpload).
type IngestDocumentWorker struct {
	river.WorkerDefaults[jobargs.IngestDocumentArgs]
	// UploadsDir is where content_ref files are (BPC_UPLOADS_DIR); empty
	// refuses content_ref.
	UploadsDir string
	// MaxUploadBytes bounds a content_ref file (BPC_PAYLOAD_MAX_BYTES).
	MaxUploadBytes int
	Completer      Completer
}

// Work stores the version.
func (w *IngestDocumentWorker) Work(ctx context.Context, job *river.Job[jobargs.IngestDocumentArgs]) error {
	a := job.Args
	mimeType, err := passport.DocumentMIME(a.MimeType)
	if err != nil {
		return err
	}
	var content []byte
	if a.ContentRef != "" {
		content, err = passport.ReadUpload(w.UploadsDir, a.TenantID, a.ContentRef, w.MaxUploadBytes)
	} else {
		content, err = passport.DocumentContent(a.Content)
	}
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

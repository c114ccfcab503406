package workers

import (
	"context"

	"github.com/riverqueue/river"

	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// ExportPassportWorker writes an ACTIVE version's export file under
// BPC_EXPORT_DIR (passport.WriteExport) and records it with the job's
// completion; the file's path, size and SHA-256 are the job's output.
type ExportPassportWorker struct {
	river.WorkerDefaults[jobargs.ExportPassportArgs]
	Store *store.Queries
	// ExportDir is where files are written (BPC_EXPORT_DIR).
	ExportDir string
	Completer Completer
}

// Work exports.
func (w *ExportPassportWorker) Work(ctx context.Context, job *river.Job[jobargs.ExportPassportArgs]) error {
	a := job.Args
	f, err := passport.WriteExport(ctx, w.Store, w.ExportDir, a.TenantID, a.PassportVersionID, a.Format)
	if err != nil {
		return err
	}
	return completeInTx(ctx, w.Completer, job, func(t passport.Tx) error {
		e, err := passport.RecordExport(ctx, t, f, job.ID)
		if err != nil {
			return err
		}
		return recordOutput(ctx, map[string]any{"passport_export_id": e.PassportExportID, "path": f.RelPath(),
			"format": f.Format, "size_bytes": f.SizeBytes, "sha256": f.SHA256})
	})
}

package workers

import (
	"context"

	"github.com/riverqueue/river"

	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
)

// BuildSnapshotWorker moves a BUILDING snapshot to READY
// (passport.BuildSnapshot); any other state fails the job with
// INVALID_STATE.
type BuildSnapshotWorker struct {
	river.WorkerDefaults[jobargs.BuildSnapshotArgs]
	Completer Completer
}

// Work builds the snapshot.
func (w *BuildSnapshotWorker) Work(ctx context.Context, job *river.Job[jobargs.BuildSnapshotArgs]) error {
	return completeInTx(ctx, w.Completer, job, func(t passport.Tx) error {
		_, err := passport.BuildSnapshot(ctx, t, job.Args.TenantID, job.Args.SnapshotID)
		return err
	})
}

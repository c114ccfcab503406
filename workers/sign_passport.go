package workers

import (
	"context"

	"github.com/riverqueue/river"

	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
)

// SignPassportWorker signs a COMPILING version's receipt with the key the
// receipt names (passport.SignPassportVersion) and enqueues GENERATE_QR.
type SignPassportWorker struct {
	river.WorkerDefaults[jobargs.SignPassportArgs]
	Keys      *passport.Keyring
	Completer Completer
}

// Work signs.
func (w *SignPassportWorker) Work(ctx context.Context, job *river.Job[jobargs.SignPassportArgs]) error {
	return completeInTx(ctx, w.Completer, job, func(t passport.Tx) error {
		return passport.SignPassportVersion(ctx, t, w.Keys, job.Args.TenantID, job.Args.PassportVersionID)
	})
}

package workers

import (
	"context"

	"github.com/riverqueue/river"

	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// GenerateQRWorker renders a SIGNED version's BPC-QR-1 code outside any
// transaction and records it with the job's completion (passport.RecordQR).
type GenerateQRWorker struct {
	river.WorkerDefaults[jobargs.GenerateQRArgs]
	Store     *store.Queries
	Completer Completer
}

// Work renders the QR code.
func (w *GenerateQRWorker) Work(ctx context.Context, job *river.Job[jobargs.GenerateQRArgs]) error {
	a := job.Args
	v, err := w.Store.GetPassportVersion(ctx, a.TenantID, a.PassportVersionID)
	if err != nil {
		return err
	}
	code, err := passport.RenderQR(v)
	if err != nil {
		return err
	}
	return completeInTx(ctx, w.Completer, job, func(t passport.Tx) error {
		return passport.RecordQR(ctx, t, a.TenantID, a.PassportVersionID, code)
	})
}

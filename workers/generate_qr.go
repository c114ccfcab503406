package workers

import (
	"context"

	"github.com/riverqueue/river"

	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// GenerateQRWorker renders a SIGNED version's QR code, the BPC-QR-2 link
// to its public page, outside any transaction and records it with the
// job's completion (passport.RecordQR). A version that has its QR code
// already keeps it.
type GenerateQRWorker struct {
	river.WorkerDefaults[jobargs.GenerateQRArgs]
	Store *store.Queries
	// PublicBaseURL returns the base of the links (BPC_PUBLIC_BASE_URL, or
	// the address the service listens on in dev).
	PublicBaseURL func() string
	Completer     Completer
}

// Work renders the QR code.
func (w *GenerateQRWorker) Work(ctx context.Context, job *river.Job[jobargs.GenerateQRArgs]) error {
	a := job.Args
	v, err := w.Store.GetPassportVersion(ctx, a.TenantID, a.PassportVersionID)
	if err != nil {
		return err
	}
	if v.QRPayload != nil {
		// Issued codes are printed on batteries: never rendered again.
		return completeInTx(ctx, w.Completer, job, func(t passport.Tx) error {
			return passport.RecordQR(ctx, t, a.TenantID, a.PassportVersionID, passport.QRCode{})
		})
	}
	base := ""
	if w.PublicBaseURL != nil {
		base = w.PublicBaseURL()
	}
	code, err := passport.RenderQR(base, v)
	if err != nil {
		return err
	}
	return completeInTx(ctx, w.Completer, job, func(t passport.Tx) error {
		return passport.RecordQR(ctx, t, a.TenantID, a.PassportVersionID, code)
	})
}

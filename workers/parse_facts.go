package workers

import (
	"context"

	"github.com/riverqueue/river"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
)

// ParseFactsWorker parses a document version into facts
// (passport.ParseFacts). A document the parser rejects is marked REJECTED
// in a committed transaction, and then the job fails with the parser's
// error (non-retryable).
type ParseFactsWorker struct {
	river.WorkerDefaults[jobargs.ParseFactsArgs]
	Completer Completer
}

// Work parses the version.
func (w *ParseFactsWorker) Work(ctx context.Context, job *river.Job[jobargs.ParseFactsArgs]) error {
	var rejected *errcode.Error
	err := inTx(ctx, w.Completer, job, func(t passport.Tx) (bool, error) {
		var err error
		rejected, err = passport.ParseFacts(ctx, t, job.Args.TenantID, job.Args.DocumentVersionID)
		return err == nil && rejected == nil, err
	})
	if err != nil {
		return err
	}
	if rejected != nil {
		return rejected
	}
	return nil
}

package workers

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// inserter returns the River client working the job: it inserts the next
// job and the event's webhook deliveries inside the handler's transaction.
func inserter(ctx context.Context) (store.Inserter, error) {
	c, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "no River client in the job context")
	}
	return c, nil
}

// inTx runs fn in a transaction. When fn returns complete = true, the job is
// completed in the same transaction, after the lease fence and the
// BeforeCommit hook. (A transaction that records a failure and does not
// complete the job, like a rejected document, is not fenced: the record is
// idempotent and the job's final state is River's to write.)
func inTx[T river.JobArgs](ctx context.Context, d Deps, job *river.Job[T], fn func(t passport.Tx) (complete bool, err error)) error {
	ins, err := inserter(ctx)
	if err != nil {
		return err
	}
	return d.Store.InTx(ctx, func(tx pgx.Tx) error {
		complete, err := fn(passport.NewTx(tx, ins, ""))
		if err != nil || !complete {
			return err
		}
		if d.BeforeCommit != nil {
			if err := d.BeforeCommit(ctx, job.JobRow); err != nil {
				return err
			}
		}
		// Fencing: commit only while this attempt holds the job's lease. A
		// worker that was paused or partitioned past its lease finds the
		// job reaped (and maybe running elsewhere) and rolls back.
		if err := d.Store.WithTx(tx).FenceLease(ctx, job.ID, job.Attempt); err != nil {
			return err
		}
		if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
			return fmt.Errorf("error completing job: %w", err)
		}
		return nil
	})
}

// validate checks a job's args; invalid args can never succeed.
func validate(args jobargs.Args) error {
	if err := args.Validate(); err != nil {
		if e := errcode.As(err); e != nil {
			return e
		}
		return errcode.Wrap(errcode.Validation, err, "%s", err.Error())
	}
	return nil
}

package workers

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// inserter returns the River client working the job: it inserts the next
// job and the event's webhook deliveries inside the handler's transaction,
// which publish is told of once committed.
func inserter(ctx context.Context, publish passport.Publisher) (*passport.TxInserter, error) {
	c, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "no River client in the job context")
	}
	return passport.NewTxInserter(passport.Publishing(c, publish)), nil
}

// Completer is what a worker needs to record its step and complete its job
// in one transaction (inTx, completeInTx).
type Completer struct {
	Store *store.Queries
	// BeforeCommit is Deps.BeforeCommit.
	BeforeCommit func(ctx context.Context, job *rivertype.JobRow) error
	// Publisher is Deps.Publisher.
	Publisher passport.Publisher
}

// inTx runs fn in a transaction. When fn returns complete = true, the job is
// completed in the same transaction, after the lease fence and the
// BeforeCommit hook. (A transaction that records a failure and does not
// complete the job, like a rejected document, is not fenced: the record is
// idempotent and the job's final state is River's to write.)
func inTx[T river.JobArgs](ctx context.Context, d Completer, job *river.Job[T], fn func(t passport.Tx) (complete bool, err error)) error {
	ins, err := inserter(ctx, d.Publisher)
	if err != nil {
		return err
	}
	// The BEGIN travels with the step's first statement (store.InLazyTx):
	// the pipeline's steps open with a batch.
	err = d.Store.InLazyTx(ctx, func(tx pgx.Tx) error {
		// The next steps' SSOT rows are checked with the fence, not read
		// back one by one (passport.Tx.Unread).
		var unread []uuid.UUID
		t := passport.NewTx(tx, ins, "")
		t.Unread = &unread
		complete, err := fn(t)
		if err != nil {
			return err
		}
		if !complete {
			return d.Store.WithTx(tx).VerifyMirrored(ctx, unread)
		}
		if d.BeforeCommit != nil {
			if err := d.BeforeCommit(ctx, job.JobRow); err != nil {
				return err
			}
		}
		// Fencing: commit only while this attempt holds the job's lease. A
		// worker that was paused or partitioned past its lease finds the
		// job reaped (and maybe running elsewhere) and rolls back.
		if err := d.Store.WithTx(tx).FenceLeaseMirrored(ctx, job.ID, job.Attempt, unread); err != nil {
			return err
		}
		if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
			return fmt.Errorf("error completing job: %w", err)
		}
		return nil
	})
	if err == nil {
		ins.Committed()
	}
	return err
}

// completeInTx runs fn in a transaction and, when fn succeeds, completes the
// job in the same transaction (see inTx).
func completeInTx[T river.JobArgs](ctx context.Context, d Completer, job *river.Job[T], fn func(t passport.Tx) error) error {
	return inTx(ctx, d, job, func(t passport.Tx) (bool, error) {
		err := fn(t)
		return err == nil, err
	})
}

// recordOutput sets the job's output, which River stores with its
// completion.
func recordOutput(ctx context.Context, output map[string]any) error {
	if err := river.RecordOutput(ctx, output); err != nil {
		return errcode.Wrap(errcode.Internal, err, "error recording job output: %s", err.Error())
	}
	return nil
}

// validated runs its worker only on args that pass Validate. Register wraps
// every job type's worker in it, so no worker repeats the check.
type validated[A jobargs.Args] struct {
	river.Worker[A]
}

// Work validates the args, then runs the worker.
func (v validated[A]) Work(ctx context.Context, job *river.Job[A]) error {
	if err := validate(job.Args); err != nil {
		return err
	}
	return v.Worker.Work(ctx, job)
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

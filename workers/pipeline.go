package workers

// The passport pipeline's handlers (SPEC §2). Each handler that only touches
// the database commits its domain writes, its audit event (which fans out to
// webhooks), the next job and its own completion (river.JobCompleteTx) in
// one transaction: a crash leaves either all of it or none of it, and the
// retry finds the state as it was. Re-running a completed job (River UI can
// retry any job) has no duplicate effect: versions, runs and exports are
// keyed by the River job that made them, next jobs by an idempotency key,
// facts by their identity.

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

// Audit aggregates and event types of the pipeline.
const (
	AggregateDocumentVersion    = "DocumentVersion"
	AggregateSnapshot           = "DataSnapshot"
	AggregatePassportVersion    = "PassportVersion"
	AggregateRulePackageVersion = "RulePackageVersion"

	EventFactsParsed      = "document.facts_parsed"
	EventDocumentRejected = "document.rejected"
	EventDocumentUploaded = "document.uploaded"
	EventSnapshotReady    = "snapshot.ready"
	EventCompiled         = "passport.compiled"
	EventSigned           = "passport.signed"
	EventQRGenerated      = "passport.qr_generated"
	EventExported         = "passport.exported"
	EventTestsRun         = "rules.tests_run"
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

// step is one transaction of a handler.
type step struct {
	d   Deps
	tx  pgx.Tx
	ins store.Inserter
}

// event appends an audit event (and its webhook fan-out) in the step.
func (s step) event(ctx context.Context, tenantID uuid.UUID, aggregate string, id uuid.UUID, eventType string, payload any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "error encoding event payload: %s", err.Error())
	}
	_, err = s.d.Store.AppendEvent(ctx, s.tx, s.ins, store.EventInput{
		TenantID: tenantID, AggregateType: aggregate, AggregateID: id, EventType: eventType, Payload: b,
	})
	return err
}

// enqueue starts the next job in the step; key makes it idempotent.
func (s step) enqueue(ctx context.Context, args jobargs.Args, key string) error {
	_, err := s.d.Store.EnqueueArgs(ctx, s.tx, s.ins, args, key)
	return err
}

// inTx runs fn in a transaction. When fn returns complete = true, the job is
// completed in the same transaction, after the lease fence and the
// BeforeCommit hook. (A transaction that records a failure and does not
// complete the job, like a rejected document, is not fenced: the record is
// idempotent and the job's final state is River's to write.)
func inTx[T river.JobArgs](ctx context.Context, d Deps, job *river.Job[T], fn func(s step) (complete bool, err error)) error {
	ins, err := inserter(ctx)
	if err != nil {
		return err
	}
	return d.Store.InTx(ctx, func(tx pgx.Tx) error {
		complete, err := fn(step{d: d, tx: tx, ins: ins})
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
		if err := d.Store.FenceLease(ctx, tx, job.ID, job.Attempt); err != nil {
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

package passport

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

// Tx is the transaction an operation runs in: the store bound to it, the
// River client that inserts the jobs the operation enqueues (in the same
// transaction), and the actor its audit events name ("" for the system,
// which is what workers are).
type Tx struct {
	Q     *store.Queries
	Ins   Inserter
	Actor string
	// Unread, when set, collects the SSOT job ids of the jobs EnqueueNext
	// inserted without reading their rows back; the transaction's owner
	// checks them before it commits (the workers: with the lease fence,
	// store.FenceLeaseMirrored). Nil: EnqueueNext reads back as Enqueue.
	Unread *[]uuid.UUID
}

// NewTx binds an operation to tx.
func NewTx(tx pgx.Tx, ins Inserter, actor string) Tx {
	return Tx{Q: store.New(tx), Ins: ins, Actor: actor}
}

// InTx runs fn in a new transaction on q and commits it when fn returns
// nil. A transaction that lost a race on an idempotency key to a concurrent
// one is run again (it then finds the winner's job), at most three times.
// Once it has committed, the queues of the jobs it inserted are published
// when ins publishes (Publishing).
func InTx(ctx context.Context, q *store.Queries, ins Inserter, actor string, fn func(t Tx) error) error {
	return retryRace(func() error {
		txIns := NewTxInserter(ins)
		err := q.InTx(ctx, func(tx pgx.Tx) error { return fn(NewTx(tx, txIns, actor)) })
		// On a Queries made WithTx the "transaction" is a savepoint, whose
		// release commits nothing: the outer transaction's owner publishes.
		if _, nested := q.DB().(pgx.Tx); err == nil && !nested {
			txIns.Committed()
		}
		return err
	})
}

// Event appends an audit event about aggregate id; payload is encoded as
// JSON. Subscribed webhook endpoints get a delivery in the same transaction.
func (t Tx) Event(ctx context.Context, tenantID uuid.UUID, aggregate string, id uuid.UUID, eventType string, payload any) error {
	return t.EventAfter(ctx, nil, tenantID, aggregate, id, eventType, payload)
}

// EventAfter is Event on an aggregate whose chain head the transaction
// knows already (EventInput.Head; nil: read it).
func (t Tx) EventAfter(ctx context.Context, head *store.Head, tenantID uuid.UUID, aggregate string, id uuid.UUID, eventType string, payload any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "error encoding %s event: %s", eventType, err.Error())
	}
	_, err = t.AppendEvent(ctx, EventInput{
		TenantID: tenantID, AggregateType: aggregate, AggregateID: id, EventType: eventType, ActorID: t.Actor, Payload: b,
		Head: head,
	})
	return err
}

// Enqueue inserts a job with its type's defaults. With an idempotency key,
// enqueueing the same args again returns the job enqueued first
// (Existing).
func (t Tx) Enqueue(ctx context.Context, args jobargs.Args, idempotencyKey string) (EnqueueResult, error) {
	return t.enqueue(ctx, args, idempotencyKey, false)
}

// EnqueueNext is Enqueue for a pipeline's next step, whose job the caller
// does not need back: in a transaction that collects Unread ids the job's
// SSOT row is checked by the transaction's owner instead of read back here
// (one round trip fewer per step).
func (t Tx) EnqueueNext(ctx context.Context, args jobargs.Args, idempotencyKey string) error {
	return t.enqueueNext(ctx, args, idempotencyKey, false)
}

// EnqueueNextNew is EnqueueNext whose idempotency key names what this
// transaction created (EnqueueRequest.KeyIsNew): it is not looked up.
func (t Tx) EnqueueNextNew(ctx context.Context, args jobargs.Args, idempotencyKey string) error {
	return t.enqueueNext(ctx, args, idempotencyKey, true)
}

func (t Tx) enqueueNext(ctx context.Context, args jobargs.Args, idempotencyKey string, keyIsNew bool) error {
	req, err := NewEnqueueRequest(args, idempotencyKey, EnqueueOptions{})
	if err != nil {
		return err
	}
	req.KeyIsNew = keyIsNew
	if _, err := enqueueTx(ctx, t.Q, t.Ins, []EnqueueRequest{req}, t.Unread); err != nil {
		return EnqueueError(err, args.Kind())
	}
	return nil
}

// EnqueueChecked is Enqueue for args whose ids (jobargs.Args.Refs) come
// from outside the transaction: an id that does not exist in its tenant is
// a *MissingRefError and nothing is enqueued.
func (t Tx) EnqueueChecked(ctx context.Context, args jobargs.Args, idempotencyKey string) (EnqueueResult, error) {
	return t.enqueue(ctx, args, idempotencyKey, true)
}

func (t Tx) enqueue(ctx context.Context, args jobargs.Args, idempotencyKey string, checked bool) (EnqueueResult, error) {
	req, err := NewEnqueueRequest(args, idempotencyKey, EnqueueOptions{})
	if err != nil {
		return EnqueueResult{}, err
	}
	reqs := []EnqueueRequest{req}
	if checked {
		if err := checkExist(ctx, t.Q, reqs, false); err != nil {
			return EnqueueResult{}, err
		}
	}
	res, err := EnqueueTx(ctx, t.Q, t.Ins, reqs)
	if err != nil {
		return EnqueueResult{}, EnqueueError(err, args.Kind())
	}
	return res[0], nil
}

// EnqueueOptions are what a client may set on a job beyond its args.
type EnqueueOptions struct {
	Priority    *int
	MaxAttempts *int
	ScheduledAt *time.Time
}

// NewEnqueueRequest validates args and builds the enqueue request, with the
// request fingerprint when there is an idempotency key.
func NewEnqueueRequest(args jobargs.Args, idempotencyKey string, o EnqueueOptions) (EnqueueRequest, error) {
	if err := args.Validate(); err != nil {
		return EnqueueRequest{}, err
	}
	req := EnqueueRequest{Args: args, IdempotencyKey: idempotencyKey,
		Priority: o.Priority, MaxAttempts: o.MaxAttempts, ScheduledAt: o.ScheduledAt}
	if idempotencyKey != "" {
		h, err := RequestHash(args, o)
		if err != nil {
			return EnqueueRequest{}, err
		}
		req.RequestHash = h
	}
	return req, nil
}

// RequestHash fingerprints what an idempotent enqueue asks for — type,
// tenant, args and the options set — so that a repeated key with different
// content is told apart from a retry. It is the same whichever way the job
// was asked for: POST /v1/jobs, a domain endpoint or a pipeline step.
func RequestHash(args jobargs.Args, o EnqueueOptions) (string, error) {
	doc := map[string]any{"type": args.Kind(), "tenant_id": args.Tenant().String(), "args": args}
	if o.Priority != nil {
		doc["priority"] = *o.Priority
	}
	if o.MaxAttempts != nil {
		doc["max_attempts"] = *o.MaxAttempts
	}
	if o.ScheduledAt != nil {
		doc["scheduled_at"] = o.ScheduledAt.UTC().Format(time.RFC3339Nano)
	}
	b, err := canonjson.Marshal(doc)
	if err != nil {
		return "", errcode.Wrap(errcode.Internal, err, "error fingerprinting request: %s", err.Error())
	}
	return hash.SHA256Hex(b), nil
}

// EnqueueError turns River's refusal of a kind without a registered worker
// (a process that works jobs checks its bundle on insert) into a clear,
// retryable error instead of an anonymous internal one.
func EnqueueError(err error, kind string) error {
	var unknown *river.UnknownJobKindError
	if errors.As(err, &unknown) {
		return errcode.Wrap(errcode.QueueUnavailable, err, "job type %s has no worker in this release", kind)
	}
	return err
}

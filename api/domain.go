package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

// Shared helpers of the passport domain endpoints (domain_*.go).

// domainActor is the actor_id of the audit events the domain endpoints append.
const domainActor = "admin-api"

// Limits of the domain endpoints.
const (
	maxNameChars    = 200
	maxSKUChars     = 100
	maxItemIDs      = 10000
	maxFactsLimit   = 1000
	maxIdemKeyChars = 255
)

// tenantRequest is the body of the actions that take nothing but the tenant.
type tenantRequest struct {
	TenantID string `json:"tenant_id"`
}

// decodeTenantBody decodes the body into dst and parses its tenant_id.
func decodeTenantBody(r *http.Request, dst any, tenant *string) (uuid.UUID, error) {
	if err := decodeJSON(r, dst); err != nil {
		return uuid.Nil, err
	}
	return parseUUID("tenant_id", *tenant)
}

// bodyTenantAndID decodes a body that carries only tenant_id and reads the
// {id} path parameter.
func bodyTenantAndID(r *http.Request) (uuid.UUID, uuid.UUID, error) {
	var in tenantRequest
	tenantID, err := decodeTenantBody(r, &in, &in.TenantID)
	if err != nil {
		return uuid.Nil, uuid.Nil, err
	}
	id, err := pathUUID(r, "id")
	return tenantID, id, err
}

// requireName trims a required name and checks its length in characters.
func requireName(field, value string, maxChars int) (string, error) {
	v := strings.TrimSpace(value)
	if v == "" || utf8.RuneCountInString(v) > maxChars {
		return "", errcode.Invalid(field, "is required, at most %d characters", maxChars)
	}
	return v, nil
}

// enqueueDomainJob enqueues args in one transaction after check (run in the
// same transaction; it may be nil), with the optional Idempotency-Key
// header as the idempotency key. A repeated key with the same args returns
// the existing job; a concurrent request that raced on the key is retried.
func (s *Server) enqueueDomainJob(r *http.Request, args jobargs.Args, check func(ctx context.Context, tx pgx.Tx) error) (store.Job, error) {
	ctx := r.Context()
	key := r.Header.Get(HeaderIdempotencyKey)
	if len(key) > maxIdemKeyChars {
		return store.Job{}, errcode.Invalid(HeaderIdempotencyKey, "must be at most %d characters", maxIdemKeyChars)
	}
	if err := args.Validate(); err != nil {
		return store.Job{}, err
	}
	if err := s.checkQueueDepth(ctx, args); err != nil {
		return store.Job{}, err
	}
	req := store.EnqueueRequest{Args: args, IdempotencyKey: key}
	if key != "" {
		// The same fingerprint as store.EnqueueArgs and a plain POST /v1/jobs.
		h, err := requestHash(enqueueRequest{Type: args.Kind()}, args)
		if err != nil {
			return store.Job{}, err
		}
		req.RequestHash = h
	}
	var res []store.EnqueueResult
	var err error
	for range 3 {
		err = s.Store.InTx(ctx, func(tx pgx.Tx) error {
			if check != nil {
				if err := check(ctx, tx); err != nil {
					return err
				}
			}
			res, err = s.Store.EnqueueTx(ctx, tx, s.River, []store.EnqueueRequest{req})
			return err
		})
		if !errors.Is(err, store.ErrIdempotencyRace) {
			break
		}
	}
	if err != nil {
		return store.Job{}, enqueueError(err, args.Kind())
	}
	if !res[0].Existing {
		s.logTransition(ctx, res[0].Job, "api")
	}
	return res[0].Job, nil
}

// enqueueError turns River's refusal of a kind without a registered worker
// (a process that works jobs checks its bundle on insert) into a clear,
// retryable error instead of an anonymous 500.
func enqueueError(err error, kind string) error {
	var unknown *river.UnknownJobKindError
	if errors.As(err, &unknown) {
		return errcode.Wrap(errcode.QueueUnavailable, err, "job type %s has no worker in this release", kind)
	}
	return err
}

// appendDomainEvent appends an audit event in tx; payload is marshalled to JSON.
func (s *Server) appendDomainEvent(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, aggregateType string, aggregateID uuid.UUID, eventType string, payload any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "error encoding %s event: %s", eventType, err.Error())
	}
	_, err = s.Store.AppendEvent(ctx, tx, s.River, store.EventInput{
		TenantID: tenantID, AggregateType: aggregateType, AggregateID: aggregateID,
		EventType: eventType, ActorID: domainActor, Payload: b,
	})
	return err
}

// jobResponse is the answer of the endpoints that start a job.
type jobResponse struct {
	Job store.Job `json:"job"`
}

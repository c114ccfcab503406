package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/internal/http/access"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// Shared helpers of the passport domain endpoints (domain_*.go).

// domainActor is the actor_id of the audit events the domain endpoints
// append for the platform token; a tenant key's events name the key
// (actorOf).
const domainActor = "admin-api"

// actorOf is the actor_id of the audit events a request appends: the API
// key it authenticated with ("api_key:<id>"), or domainActor.
func actorOf(ctx context.Context) string {
	if p, ok := access.FromContext(ctx); ok && !p.Platform {
		return "api_key:" + p.KeyID.String()
	}
	return domainActor
}

// Limits of the domain endpoints.
const (
	maxItemIDs    = 10000
	maxFactsLimit = 1000
)

// tenantRequest is the body of the actions that take nothing but the
// tenant, which the id implies: {} will do.
type tenantRequest struct {
	TenantID ID `json:"tenant_id,omitempty" doc:"Optional: a tenant API key's own tenant when absent (another tenant's is 403), the resource's own for the platform token."`
}

// startJob enqueues args in one transaction after check (run in the same
// transaction; it may be nil), with the optional Idempotency-Key header as
// the idempotency key, and answers 202 with the job. A repeated key with
// the same args answers the existing job.
func (s *Server) startJob(ctx context.Context, key string, args jobargs.Args, check func(ctx context.Context, q *store.Queries) error) (*out[jobResponse], error) {
	if err := passport.CheckIdempotencyKey(HeaderIdempotencyKey, key); err != nil {
		return nil, err
	}
	if err := args.Validate(); err != nil {
		return nil, err
	}
	if err := s.checkQueueDepth(ctx, args); err != nil {
		return nil, err
	}
	admitted, err := s.queued.Admit(ctx, s.Store, s.quotaDefaults(), []uuid.UUID{args.Tenant()})
	if err != nil {
		return nil, err
	}
	res, err := inTxValue(ctx, s, func(t passport.Tx) (passport.EnqueueResult, error) {
		if check != nil {
			if err := check(ctx, t.Q); err != nil {
				return passport.EnqueueResult{}, err
			}
		}
		// The other ids the job names (a compile's snapshot and rule
		// package version): another tenant's is as unknown as a made-up
		// one, and no job is enqueued for it.
		res, err := t.EnqueueChecked(ctx, args, key)
		var missing *passport.MissingRefError
		if errors.As(err, &missing) {
			return passport.EnqueueResult{}, refNotFound(missing.Ref, missing.Ref.Field)
		}
		return res, err
	})
	if err != nil {
		admitted.Done(nil)
		return nil, err
	}
	admitted.Done([]passport.EnqueueResult{res})
	if !res.Existing {
		s.logTransition(ctx, res.Job, "api")
	}
	return reply(http.StatusAccepted, jobResponse{Job: res.Job})
}

// exists is a check of startJob: get (a method expression such as
// (*store.Queries).GetSnapshot) finds the tenant's id.
func exists[T any](get func(*store.Queries, context.Context, uuid.UUID, uuid.UUID) (T, error), tenantID, id uuid.UUID) func(context.Context, *store.Queries) error {
	return func(ctx context.Context, q *store.Queries) error {
		_, err := get(q, ctx, tenantID, id)
		return err
	}
}

// inTx runs a domain operation in a transaction, as the admin API.
func (s *Server) inTx(ctx context.Context, fn func(t passport.Tx) error) error {
	var ins passport.Inserter = s.River
	if s.Inserter != nil {
		ins = s.Inserter
	}
	return passport.InTx(ctx, s.Store, ins, actorOf(ctx), fn)
}

// inTxValue is inTx for an operation with a result.
func inTxValue[T any](ctx context.Context, s *Server, fn func(t passport.Tx) (T, error)) (T, error) {
	var v T
	err := s.inTx(ctx, func(t passport.Tx) error {
		var err error
		v, err = fn(t)
		return err
	})
	return v, err
}

// actOnID answers POST …/{id}/<action> whose body names only the tenant:
// op changes the resource in a transaction, as the admin API, and answers
// 200 with what it returns.
func actOnID[T any](ctx context.Context, s *Server, req *idBody[tenantRequest], op func(context.Context, passport.Tx, uuid.UUID, uuid.UUID) (T, error)) (*out[T], error) {
	tenantID, id, err := s.parseTenantAndID(ctx, req.Body.TenantID, req.ID)
	if err != nil {
		return nil, err
	}
	return ok(inTxValue(ctx, s, func(t passport.Tx) (T, error) { return op(ctx, t, tenantID, id) }))
}

// idKeyBody is an {id}, an optional Idempotency-Key and a JSON body B:
// the input of the endpoints that start a job.
type idKeyBody[B any] struct {
	ID             ID     `path:"id"`
	IdempotencyKey string `header:"Idempotency-Key" maxLength:"255" doc:"Makes the request idempotent: the same key and request return the existing job."`
	Body           B
}

// jobResponse is the answer of the endpoints that start a job.
type jobResponse struct {
	Job bpctype.Job `json:"job"`
}

package api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
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

// startJob enqueues args, with the optional Idempotency-Key header as the
// idempotency key, and answers 202 with the job. A repeated key with the
// same args answers the existing job. Every id the job names must exist in
// its tenant: the path's (pathID, the first of the args' refs) is NOT_FOUND
// as its GET answers, another (a compile's snapshot and rule package
// version) names its field; another tenant's is as unknown as a made-up
// one, and no job is enqueued for it. The checks travel with the BEGIN of
// the enqueue's transaction (passport.Enqueue: three round trips).
func (s *Server) startJob(ctx context.Context, key string, args jobargs.Args, pathID uuid.UUID) (*out[jobResponse], error) {
	if err := passport.CheckIdempotencyKey(HeaderIdempotencyKey, key); err != nil {
		return nil, err
	}
	req, err := passport.NewEnqueueRequest(args, key, passport.EnqueueOptions{})
	if err != nil {
		return nil, err
	}
	if err := s.checkQueueDepth(ctx, args); err != nil {
		return nil, err
	}
	admitted, err := s.queued.Admit(ctx, s.Store, s.quotaDefaults(), []uuid.UUID{args.Tenant()})
	if err != nil {
		return nil, err
	}
	var ins passport.Inserter = s.River
	if s.Inserter != nil {
		ins = s.Inserter
	}
	results, err := passport.Enqueue(ctx, s.Store, ins, []passport.EnqueueRequest{req})
	var missing *passport.MissingRefError
	switch {
	case errors.As(err, &missing) && missing.Ref.ID == pathID && missing.Ref.Field == args.Refs()[0].Field:
		// The path's id is each of these jobs' first ref; a body id equal
		// to it is still the body's field.
		err = errcode.Wrap(errcode.NotFound, store.ErrNotFound, "%s %v not found",
			strings.ReplaceAll(string(missing.Ref.Entity), "_", " "), missing.Ref.ID)
	case errors.As(err, &missing):
		err = refNotFound(missing.Ref, missing.Ref.Field)
	case err != nil:
		err = passport.EnqueueError(err, args.Kind())
	}
	if err != nil {
		admitted.Done(nil)
		return nil, err
	}
	admitted.Done(results)
	res := results[0]
	if !res.Existing {
		s.logTransition(ctx, res.Job, "api")
	}
	return reply(http.StatusAccepted, jobResponse{Job: res.Job})
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

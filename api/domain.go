package api

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
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
	TenantID string `json:"tenant_id" format:"uuid"`
}

// decodeTenantBody decodes the body into dst and parses its tenant_id.
func decodeTenantBody(body []byte, dst any, tenant *string) (uuid.UUID, error) {
	if err := decodeBytes(body, dst); err != nil {
		return uuid.Nil, err
	}
	return parseUUID("tenant_id", *tenant)
}

// bodyTenantAndID decodes a body that carries only tenant_id and reads the
// {id} path parameter.
func bodyTenantAndID(body []byte, pathID string) (uuid.UUID, uuid.UUID, error) {
	var in tenantRequest
	tenantID, err := decodeTenantBody(body, &in, &in.TenantID)
	if err != nil {
		return uuid.Nil, uuid.Nil, err
	}
	id, err := parseUUID("id", pathID)
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
// the existing job.
func (s *Server) enqueueDomainJob(ctx context.Context, key string, args jobargs.Args, check func(ctx context.Context, q *store.Queries) error) (store.Job, error) {
	if len(key) > maxIdemKeyChars {
		return store.Job{}, errcode.Invalid(HeaderIdempotencyKey, "must be at most %d characters", maxIdemKeyChars)
	}
	if err := args.Validate(); err != nil {
		return store.Job{}, err
	}
	if err := s.checkQueueDepth(ctx, args); err != nil {
		return store.Job{}, err
	}
	var res store.EnqueueResult
	err := s.inTx(ctx, func(t passport.Tx) error {
		if check != nil {
			if err := check(ctx, t.Q); err != nil {
				return err
			}
		}
		var err error
		res, err = t.Enqueue(ctx, args, key)
		return err
	})
	if err != nil {
		return store.Job{}, err
	}
	if !res.Existing {
		s.logTransition(ctx, res.Job, "api")
	}
	return res.Job, nil
}

// inTx runs a domain operation in a transaction, as the admin API.
func (s *Server) inTx(ctx context.Context, fn func(t passport.Tx) error) error {
	return passport.InTx(ctx, s.Store, s.River, domainActor, fn)
}

// idKeyBody is an {id}, an optional Idempotency-Key and a JSON body (that
// names the tenant): the input of the endpoints that start a job.
type idKeyBody struct {
	ID             string `path:"id" format:"uuid"`
	IdempotencyKey string `header:"Idempotency-Key" maxLength:"255" doc:"Makes the request idempotent: the same key and request return the existing job."`
	RawBody        []byte
}

// jobResponse is the answer of the endpoints that start a job.
type jobResponse struct {
	Job store.Job `json:"job"`
}

package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// Limits of the jobs endpoints.
const (
	maxBatchJobs   = 1000
	maxWait        = 30 * time.Second
	maxAttemptsCap = 100
	// HeaderIdempotencyKey may carry the idempotency key instead of the body.
	HeaderIdempotencyKey = "Idempotency-Key"
)

type enqueueRequest struct {
	Type           string          `json:"type"`
	TenantID       ID              `json:"tenant_id,omitempty"`
	Payload        json.RawMessage `json:"payload"`
	Priority       *int            `json:"priority" minimum:"0" maximum:"3" doc:"0 (critical: the platform token only) to 3 (low); the type's default when absent."`
	MaxAttempts    *int            `json:"max_attempts" minimum:"1" maximum:"100" doc:"The type's default when absent."`
	IdempotencyKey string          `json:"idempotency_key" maxLength:"255" doc:"The same key and request return the existing job (200); or the Idempotency-Key header."`
	ScheduledAt    *time.Time      `json:"scheduled_at" doc:"Run no earlier than this; now when absent."`
}

// toStoreRequest validates an enqueue request (a batch names the job of an
// error, errcode.Prefixed).
func (s *Server) toStoreRequest(ctx context.Context, in enqueueRequest) (passport.EnqueueRequest, error) {
	tenantID, err := tenantOf(ctx, in.TenantID)
	if err != nil {
		return passport.EnqueueRequest{}, err
	}
	kind, known := jobargs.Find(s.Config.Kinds, in.Type)
	switch {
	case in.Type == "":
		return passport.EnqueueRequest{}, errcode.Invalid("type", "is required (one of %s)", strings.Join(jobargs.Names(s.Config.Kinds), ", "))
	case !known:
		return passport.EnqueueRequest{}, errcode.Invalid("type", "unknown job type %q (known: %s)", in.Type, strings.Join(jobargs.Names(s.Config.Kinds), ", "))
	case in.Priority != nil && (*in.Priority < jobargs.PriorityCritical || *in.Priority > jobargs.PriorityLow):
		return passport.EnqueueRequest{}, errcode.Invalid("priority", "must be 0 (critical) to 3 (low)")
	case in.MaxAttempts != nil && (*in.MaxAttempts < 1 || *in.MaxAttempts > maxAttemptsCap):
		return passport.EnqueueRequest{}, errcode.Invalid("max_attempts", "must be 1 to %d", maxAttemptsCap)
	}
	if err := allowPriority(ctx, in.Priority); err != nil {
		return passport.EnqueueRequest{}, err
	}
	if err := passport.CheckIdempotencyKey("idempotency_key", in.IdempotencyKey); err != nil {
		return passport.EnqueueRequest{}, err
	}
	args, err := jobargs.Decode(kind, tenantID, in.Payload)
	if err != nil {
		return passport.EnqueueRequest{}, err
	}
	return passport.NewEnqueueRequest(args, in.IdempotencyKey, passport.EnqueueOptions{
		Priority: in.Priority, MaxAttempts: in.MaxAttempts, ScheduledAt: in.ScheduledAt})
}

// allowPriority checks that the request's principal may ask for SSOT
// priority (nil: the type's default): critical (0) is the platform's, so
// that no tenant puts its jobs ahead of every other tenant's.
func allowPriority(ctx context.Context, priority *int) error {
	p, err := principal(ctx)
	switch {
	case err != nil:
		return err
	case p.Platform || priority == nil || *priority != jobargs.PriorityCritical:
		return nil
	}
	return errcode.Invalid("priority", "0 (critical) takes the platform token; a tenant key asks for 1 (high) to 3 (low), or leaves it out for the type's default")
}

// enqueue inserts the requests in one transaction, after checking that
// their tenants and the ids they name exist (passport.Enqueue: the
// checks travel with the transaction's BEGIN). batch says whether errors
// name fields as jobs[i].….
func (s *Server) enqueue(ctx context.Context, reqs []passport.EnqueueRequest, batch bool) ([]passport.EnqueueResult, error) {
	args := make([]jobargs.Args, len(reqs))
	for i, req := range reqs {
		args[i] = req.Args
	}
	if err := s.checkQueueDepth(ctx, args...); err != nil {
		return nil, err
	}
	tenants := make([]uuid.UUID, len(args))
	for i, a := range args {
		tenants[i] = a.Tenant()
	}
	admitted, err := s.queued.Admit(ctx, s.Store, s.quotaDefaults(), tenants)
	if err != nil && !s.replaysOnly(ctx, reqs, err) {
		return nil, err
	}
	var ins passport.Inserter = s.River
	if s.Inserter != nil {
		ins = s.Inserter
	}
	results, err := passport.Enqueue(ctx, s.Store, ins, reqs)
	if err != nil {
		admitted.Done(nil)
	} else {
		admitted.Done(results)
	}
	var missing *passport.MissingRefError
	if errors.As(err, &missing) {
		field := jobargs.PayloadPrefix + missing.Ref.Field
		if batch {
			field = "jobs[" + strconv.Itoa(missing.Index) + "]." + field
		}
		return nil, refNotFound(missing.Ref, field)
	}
	if err != nil {
		return nil, err
	}
	for _, res := range results {
		if !res.Existing {
			s.logTransition(ctx, res.Job, "api")
		}
	}
	return results, nil
}

// replaysOnly reports whether an enqueue the queued_jobs quota refused
// (err) only repeats jobs that exist: every request carries an idempotency
// key already used. A client retrying an enqueue whose answer it lost is
// answered its jobs (or IDEMPOTENCY_CONFLICT), not 429: nothing new would
// be queued.
func (s *Server) replaysOnly(ctx context.Context, reqs []passport.EnqueueRequest, err error) bool {
	if e := errcode.As(err); e == nil || e.Code != errcode.QuotaExceeded {
		return false
	}
	keys := make([]store.IdempotencyKey, len(reqs))
	for i, req := range reqs {
		if req.IdempotencyKey == "" {
			return false
		}
		keys[i] = store.IdempotencyKey{TenantID: req.Args.Tenant(), Type: req.Args.Kind(), Key: req.IdempotencyKey}
	}
	jobs, lookupErr := s.Store.JobsByIdempotencyKey(ctx, keys)
	if lookupErr != nil {
		return false
	}
	found := map[store.IdempotencyKey]bool{}
	for _, j := range jobs {
		if j.IdempotencyKey != nil {
			found[store.IdempotencyKey{TenantID: j.TenantID, Type: j.Type, Key: *j.IdempotencyKey}] = true
		}
	}
	for _, k := range keys {
		if !found[k] {
			return false
		}
	}
	return true
}

type enqueueInput struct {
	IdempotencyKey string `header:"Idempotency-Key" maxLength:"255" doc:"Alternative to idempotency_key in the body."`
	Body           enqueueRequest
}

// jobOutput is a job, with the status of the answer.
type jobOutput struct {
	Status     int
	RetryAfter string `header:"Retry-After" hidden:"true"` // documented on the 202 of get-job
	Body       bpctype.Job
}

func (s *Server) handleEnqueue(ctx context.Context, raw *enqueueInput) (*jobOutput, error) {
	in := raw.Body
	if key := raw.IdempotencyKey; key != "" {
		if in.IdempotencyKey != "" && in.IdempotencyKey != key {
			return nil, errcode.Invalid("idempotency_key", "differs from the Idempotency-Key header")
		}
		in.IdempotencyKey = key
	}
	req, err := s.toStoreRequest(ctx, in)
	if err != nil {
		return nil, err
	}
	results, err := s.enqueue(ctx, []passport.EnqueueRequest{req}, false)
	if err != nil {
		return nil, err
	}
	status := http.StatusCreated
	if results[0].Existing {
		status = http.StatusOK
	}
	return &jobOutput{Status: status, Body: results[0].Job}, nil
}

type batchRequest struct {
	Jobs []enqueueRequest `json:"jobs"`
}

type batchItem struct {
	bpctype.Job
	Existing bool `json:"existing"`
}

func (s *Server) handleEnqueueBatch(ctx context.Context, raw *bodyInput[batchRequest]) (*out[items[batchItem]], error) {
	in := raw.Body
	if len(in.Jobs) == 0 || len(in.Jobs) > maxBatchJobs {
		return nil, errcode.Invalid("jobs", "must hold 1 to %d jobs", maxBatchJobs)
	}
	if err := s.chargeJobs(ctx, len(in.Jobs)); err != nil {
		return nil, err
	}
	reqs := make([]passport.EnqueueRequest, len(in.Jobs))
	for i, job := range in.Jobs {
		req, err := s.toStoreRequest(ctx, job)
		if err != nil {
			// The job's place is named only for an error: building it
			// for every job cost an allocation each.
			return nil, errcode.Prefixed(err, "jobs["+strconv.Itoa(i)+"].")
		}
		reqs[i] = req
	}
	results, err := s.enqueue(ctx, reqs, true)
	if err != nil {
		return nil, err
	}
	status, batch := http.StatusOK, items[batchItem]{Items: make([]batchItem, len(results))}
	for i, res := range results {
		batch.Items[i] = batchItem{Job: res.Job, Existing: res.Existing}
		if !res.Existing {
			status = http.StatusCreated
		}
	}
	return reply(status, batch)
}

func (s *Server) handleListJobs(ctx context.Context, in *listJobsParams) (*out[store.JobPage], error) {
	f := store.JobFilter{Type: in.Type, Status: in.Status, Cursor: in.Cursor, Limit: in.Limit}
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if p.Platform && in.TenantID.IsZero() {
		f.AllTenants = true
	} else if f.TenantID, err = tenantOf(ctx, in.TenantID); err != nil {
		return nil, err
	}
	if !in.CreatedAfter.IsZero() {
		f.CreatedAfter = &in.CreatedAfter
	}
	if !in.CreatedBefore.IsZero() {
		f.CreatedBefore = &in.CreatedBefore
	}
	return ok(s.reads().ListJobs(ctx, f))
}

// handleGetJob returns a job. With waitMs it long-polls: 200 as soon as the
// job is terminal, 202 with Retry-After when the wait ends first.
func (s *Server) handleGetJob(ctx context.Context, in *getJobParams) (*jobOutput, error) {
	tenantID, jobID, err := s.parseTenantAnd(ctx, "job_id", in.TenantID, in.JobID)
	if err != nil {
		return nil, err
	}
	waitMs := -1 // no wait
	switch {
	case in.WaitMs.Set && in.WaitMsAlias.Set && in.WaitMs.Value != in.WaitMsAlias.Value:
		return nil, errcode.Invalid("waitMs", "differs from wait_ms; waitMs is its deprecated alias, give one")
	case in.WaitMs.Set:
		waitMs = in.WaitMs.Value
	case in.WaitMsAlias.Set:
		waitMs = in.WaitMsAlias.Value
	}
	job, err := s.Store.GetJob(ctx, tenantID, jobID)
	if err != nil {
		return nil, err
	}
	if waitMs < 0 {
		return &jobOutput{Status: http.StatusOK, Body: job}, nil
	}
	deadline := time.Now().Add(time.Duration(waitMs) * time.Millisecond)
	delay := s.pollInterval
	if delay <= 0 {
		delay = 50 * time.Millisecond
	}
	for !bpctype.IsTerminal(job.Status) {
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return &jobOutput{Status: http.StatusAccepted, RetryAfter: "1", Body: job}, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil // the client went away; nobody reads the answer
		case <-time.After(min(delay, remaining)):
		}
		delay = min(delay*2, time.Second)
		if job, err = s.Store.GetJob(ctx, tenantID, jobID); err != nil {
			return nil, err
		}
	}
	return &jobOutput{Status: http.StatusOK, Body: job}, nil
}

// jobAction locks the SSOT row of a job, checks it can take the action and
// runs it on the River job in the same transaction.
func (s *Server) jobAction(ctx context.Context, in *jobParams, check func(bpctype.Job) error, act func(ctx context.Context, tx pgx.Tx, riverJobID int64) error) (*jobOutput, error) {
	tenantID, jobID, err := s.parseTenantAnd(ctx, "job_id", in.TenantID, in.JobID)
	if err != nil {
		return nil, err
	}
	var job bpctype.Job
	err = s.Store.InTx(ctx, func(tx pgx.Tx) error {
		job, err = s.Store.WithTx(tx).GetJobForUpdate(ctx, tenantID, jobID)
		if err != nil {
			return err
		}
		if job.RiverDeletedAt != nil {
			return errcode.New(errcode.InvalidState, "the River job of %s was deleted; enqueue a new job", jobID)
		}
		if err := check(job); err != nil {
			return err
		}
		if err := act(ctx, tx, job.RiverJobID); err != nil {
			return err
		}
		job, err = s.Store.WithTx(tx).GetJob(ctx, tenantID, jobID)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.logTransition(ctx, job, "api")
	return &jobOutput{Status: http.StatusOK, Body: job}, nil
}

// logTransition writes the job transition line for a change made outside a
// worker (an enqueue, or an operator's retry or cancel).
func (s *Server) logTransition(ctx context.Context, job bpctype.Job, source string) {
	s.Logger.LogAttrs(ctx, slog.LevelInfo, "job transition",
		slog.String("job_id", job.JobID.String()),
		slog.Int64("river_job_id", job.RiverJobID),
		slog.String("type", job.Type),
		slog.String("tenant_id", job.TenantID.String()),
		slog.Int("attempt", int(job.Attempts)),
		slog.String("status", job.Status),
		slog.String("source", source),
		slog.String("correlation_id", correlationID(ctx)))
}

func (s *Server) handleRetryJob(ctx context.Context, in *jobParams) (*jobOutput, error) {
	// A retry queues the job again: it takes a place in its tenant's
	// queued_jobs quota as an enqueue does.
	tenantID, _, err := s.parseTenantAnd(ctx, "job_id", in.TenantID, in.JobID)
	if err != nil {
		return nil, err
	}
	admitted, err := s.queued.Admit(ctx, s.Store, s.quotaDefaults(), []uuid.UUID{tenantID})
	if err != nil {
		return nil, err
	}
	var queue string
	out, err := s.jobAction(ctx, in, func(job bpctype.Job) error {
		switch job.Status {
		case bpctype.StatusRunning:
			return errcode.New(errcode.InvalidState, "job %s is running; cancel it first or wait", job.JobID)
		case bpctype.StatusSucceeded:
			// Retry is for work that did not get done; re-running finished
			// work is a new job (with a new idempotency key).
			return errcode.New(errcode.InvalidState, "job %s already SUCCEEDED; enqueue a new job to run it again", job.JobID)
		}
		return nil
	}, func(ctx context.Context, tx pgx.Tx, riverJobID int64) error {
		row, err := s.River.JobRetryTx(ctx, tx, riverJobID)
		if err == nil {
			queue = row.Queue
		}
		return err
	})
	requeued := 0
	if err == nil {
		requeued = 1
		s.publish(queue)
	}
	admitted.DoneInserted(tenantID, requeued)
	return out, err
}

// publish announces that jobs of queues became available outside an
// insert (an operator's retry), as a committed insert is announced: with
// the RabbitMQ trigger, poll-only workers fetch them at once.
func (s *Server) publish(queues ...string) {
	if p, ok := s.Inserter.(passport.Publisher); ok {
		p.Publish(queues)
	}
}

func (s *Server) handleCancelJob(ctx context.Context, in *jobParams) (*jobOutput, error) {
	return s.jobAction(ctx, in, func(job bpctype.Job) error {
		if bpctype.IsTerminal(job.Status) {
			return errcode.New(errcode.InvalidState, "job %s is already %s", job.JobID, job.Status)
		}
		return nil
	}, func(ctx context.Context, tx pgx.Tx, riverJobID int64) error {
		_, err := s.River.JobCancelTx(ctx, tx, riverJobID)
		return err
	})
}

// refNotFound is the NOT_FOUND answer for a referenced id, naming the
// request field that holds it.
func refNotFound(ref jobargs.Ref, field string) error {
	e := errcode.New(errcode.NotFound, "%s %s not found", strings.ReplaceAll(string(ref.Entity), "_", " "), ref.ID)
	e.Field, e.Details = field, map[string]any{"field": field}
	return e
}

// requireTenantExists returns NOT_FOUND for an unknown tenant.
func (s *Server) requireTenantExists(ctx context.Context, tenantID uuid.UUID) error {
	return s.Store.RequireTenant(ctx, tenantID)
}

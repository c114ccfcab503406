package passport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

// Inserter inserts River jobs inside a transaction; *river.Client[pgx.Tx] is one.
type Inserter interface {
	InsertManyTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
}

// Publisher hears, after a transaction has committed, the queues its job
// inserts went to: the RabbitMQ trigger publishes them so that workers
// fetch at once instead of at their next poll.
type Publisher interface {
	Publish(queues []string)
}

// Publishing returns ins, whose committed inserts p hears of through a
// TxInserter; ins itself when p is nil.
func Publishing(ins Inserter, p Publisher) Inserter {
	if p == nil {
		return ins
	}
	return publishingInserter{Inserter: ins, Publisher: p}
}

type publishingInserter struct {
	Inserter
	Publisher
}

// TxInserter is the Inserter of one transaction: it inserts through the
// Inserter it wraps and remembers the queues, which Committed hands to that
// Inserter when it publishes (Publishing). Before the commit no worker
// could see the jobs; after a rollback there are none.
type TxInserter struct {
	ins    Inserter
	queues []string
}

// NewTxInserter returns the Inserter of a transaction about to begin.
func NewTxInserter(ins Inserter) *TxInserter { return &TxInserter{ins: ins} }

// InsertManyTx inserts through the wrapped Inserter and remembers the
// queues of the jobs it inserted.
func (t *TxInserter) InsertManyTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
	res, err := t.ins.InsertManyTx(ctx, tx, params)
	if err != nil {
		return res, err
	}
	for _, r := range res {
		if r != nil && r.Job != nil && !r.UniqueSkippedAsDuplicate && !slices.Contains(t.queues, r.Job.Queue) {
			t.queues = append(t.queues, r.Job.Queue)
		}
	}
	return res, nil
}

// Committed tells the wrapped Inserter's publisher the queues inserted
// into; call it once the transaction has committed.
func (t *TxInserter) Committed() {
	if p, ok := t.ins.(Publisher); ok && len(t.queues) > 0 {
		p.Publish(t.queues)
	}
}

// EnqueueRequest is one job to insert through River.
type EnqueueRequest struct {
	// JobID is the SSOT job id to use; a new one when zero.
	JobID uuid.UUID
	Args  jobargs.Args
	// Priority overrides the type's default SSOT priority (0..3).
	Priority *int
	// MaxAttempts overrides the service default.
	MaxAttempts *int
	// ScheduledAt delays the first attempt.
	ScheduledAt *time.Time
	// IdempotencyKey makes the enqueue repeatable: same key and request, same job.
	IdempotencyKey string
	// RequestHash fingerprints the request for idempotency conflicts.
	RequestHash string
	// KeyIsNew says that the idempotency key names what the caller's
	// transaction created (a new passport version's id, random per
	// attempt): no job can hold it yet, so it is not looked up. Were a
	// live job to hold it, the insert would fail on jobs_live's unique
	// index rather than answer that job; jobs_history's key index is not
	// unique, so a key that could name a finished job must never be
	// marked new. Set only by Tx.EnqueueNextNew, never from a request.
	KeyIsNew bool `json:"-"`
}

// EnqueueResult is the SSOT job of one request and whether it already existed.
type EnqueueResult struct {
	Job      bpctype.Job
	Existing bool
}

// ErrIdempotencyRace means a concurrent request inserted the same
// idempotency key first; the caller retries in a new transaction and then
// finds that job.
var ErrIdempotencyRace = errors.New("concurrent enqueue with the same idempotency key")

// MissingRefError is the answer of an enqueue for an id that does not exist
// in its job's tenant: Ref, named by request Index.
type MissingRefError struct {
	Index int
	Ref   jobargs.Ref
}

func (e *MissingRefError) Error() string {
	return fmt.Sprintf("%s %s not found", e.Ref.Entity, e.Ref.ID)
}

// MaxIdempotencyKeyChars is the longest idempotency key a client may send.
const MaxIdempotencyKeyChars = 255

// maxRaceAttempts is how many times a transaction that lost a race on an
// idempotency key is run: the second run finds the winner's job.
const maxRaceAttempts = 3

// retryRace runs attempt until it does not lose a race on an idempotency
// key to a concurrent transaction, at most maxRaceAttempts times. It is the
// one retry of every enqueue, on its own or in a domain operation (InTx).
func retryRace(attempt func() error) error {
	var err error
	for range maxRaceAttempts {
		err = attempt()
		if !errors.Is(err, ErrIdempotencyRace) {
			return err
		}
	}
	return err
}

// Enqueue inserts the requested jobs, for a caller outside the service (the
// admin API's POST /v1/jobs): it refuses a request whose tenant does not
// exist (NOT_FOUND) or whose args name an id (jobargs.Args.Refs) that does
// not exist in that tenant (*MissingRefError), then enqueues as EnqueueTx.
// On a pool it runs in a transaction of its own, retried when it lost a
// race on an idempotency key, and publishes the queues inserted into once
// committed when ins publishes (Publishing). On Queries made WithTx it runs
// in that transaction instead (and the owner publishes).
//
// On a pool it costs River's own Insert's three round trips: the tenant, id
// and idempotency checks travel with the BEGIN, the verification that the
// mirror wrote every SSOT row with the COMMIT, and the SSOT rows are not
// read back but computed from River's (insertedJob).
func Enqueue(ctx context.Context, q *store.Queries, ins Inserter, reqs []EnqueueRequest) ([]EnqueueResult, error) {
	if _, inTx := q.DB().(pgx.Tx); inTx {
		if err := checkExist(ctx, q, reqs, true); err != nil {
			return nil, err
		}
		return EnqueueTx(ctx, q, ins, reqs)
	}
	var results []EnqueueResult
	err := retryRace(func() error {
		var err error
		results, err = enqueueOwnTx(ctx, q, ins, reqs)
		return err
	})
	return results, err
}

// EnqueueTx inserts the requested jobs through River in the transaction q
// runs in, without checking what they name (the caller wrote it in this
// transaction). The SSOT rows are written by the mirror trigger in the same
// transaction, carrying the job_id, idempotency key and request hash passed
// in River's metadata. A repeated idempotency key with the same request
// hash returns the existing job; with a different one, IDEMPOTENCY_CONFLICT.
func EnqueueTx(ctx context.Context, q *store.Queries, ins Inserter, reqs []EnqueueRequest) ([]EnqueueResult, error) {
	return enqueueTx(ctx, q, ins, reqs, nil)
}

// enqueueTx is EnqueueTx that, with unread set, appends the new jobs' ids
// to it instead of reading their SSOT rows back (their results then hold
// only the job id): the caller checks them before it commits.
func enqueueTx(ctx context.Context, q *store.Queries, ins Inserter, reqs []EnqueueRequest, unread *[]uuid.UUID) ([]EnqueueResult, error) {
	tx, ok := q.DB().(pgx.Tx)
	if !ok {
		return nil, errors.New("passport: River inserts need Queries made WithTx")
	}
	plan := planEnqueue(reqs)
	var existing map[store.IdempotencyKey]bpctype.Job
	if len(plan.lookups) > 0 {
		jobs, err := q.JobsByIdempotencyKey(ctx, plan.keys(reqs))
		if err != nil {
			return nil, err
		}
		existing = existingByKey(jobs)
	}
	results := make([]EnqueueResult, len(reqs))
	insert, err := plan.resolve(reqs, existing, results)
	if err != nil {
		return nil, err
	}
	if len(insert) > 0 {
		params, ids, err := insertParams(reqs, insert)
		if err != nil {
			return nil, err
		}
		if _, err := ins.InsertManyTx(ctx, tx, params); err != nil {
			return nil, insertError(err)
		}
		if unread != nil {
			*unread = append(*unread, ids...)
			for n, i := range insert {
				results[i].Job = bpctype.Job{JobID: ids[n]}
			}
		} else if err := readBack(ctx, q, insert, ids, results); err != nil {
			// Read back rather than computed (enqueueOwnTx): the caller's
			// transaction began where this cannot see, and the read
			// notices a missing mirror trigger.
			return nil, err
		}
	}
	plan.finish(results)
	return results, nil
}

// checkExist refuses requests whose tenant (when tenants) or named ids do
// not exist: the one existence check of every checked enqueue.
func checkExist(ctx context.Context, q *store.Queries, reqs []EnqueueRequest, tenants bool) error {
	ts, refs, keys, owners := checksOf(reqs, tenants)
	if len(ts) == 0 && len(keys) == 0 {
		return nil // nothing to ask: no round trip
	}
	c, err := q.CheckRefs(ctx, ts, keys)
	if err != nil {
		return err
	}
	return refusal(c, refs, owners)
}

// refusal is the error of a failed existence check: the missing tenant
// first, then the first missing ref.
func refusal(c store.RefCheck, refs []jobargs.Ref, owners []int) error {
	switch {
	case c.MissingTenant != nil:
		return errcode.Wrap(errcode.NotFound, store.ErrNotFound, "tenant %v not found", *c.MissingTenant)
	case c.MissingRef >= 0:
		return &MissingRefError{Index: owners[c.MissingRef], Ref: refs[c.MissingRef]}
	}
	return nil
}

// checksOf lists the distinct tenants of reqs, in order (none unless
// tenants), and the ids their args name with the index of the request
// naming each.
func checksOf(reqs []EnqueueRequest, tenants bool) ([]uuid.UUID, []jobargs.Ref, []store.RefKey, []int) {
	var ts []uuid.UUID
	var refs []jobargs.Ref
	var keys []store.RefKey
	var owners []int
	for i, req := range reqs {
		if t := req.Args.Tenant(); tenants && (len(ts) == 0 || (ts[len(ts)-1] != t && !slices.Contains(ts, t))) {
			ts = append(ts, t)
		}
		for _, r := range req.Args.Refs() {
			refs = append(refs, r)
			keys = append(keys, store.RefKey{Entity: string(r.Entity), TenantID: r.TenantID, ID: r.ID})
			owners = append(owners, i)
		}
	}
	return ts, refs, keys, owners
}

// enqueueOwnTx is one attempt of Enqueue on a connection of q's pool.
func enqueueOwnTx(ctx context.Context, q *store.Queries, ins Inserter, reqs []EnqueueRequest) ([]EnqueueResult, error) {
	plan := planEnqueue(reqs)
	ts, refs, keys, owners := checksOf(reqs, true)
	var (
		check    store.RefCheck
		existing []bpctype.Job
		results  []EnqueueResult
		txIns    *TxInserter
	)
	open := func(b *pgx.Batch) error {
		if err := store.QueueCheckRefs(b, ts, keys, &check); err != nil {
			return err
		}
		if len(plan.lookups) > 0 {
			store.QueueJobsByIdempotencyKey(b, plan.keys(reqs), &existing)
		}
		return nil
	}
	err := q.InBatchTx(ctx, open, func(tx pgx.Tx) ([]uuid.UUID, error) {
		if err := refusal(check, refs, owners); err != nil {
			return nil, err
		}
		results = make([]EnqueueResult, len(reqs))
		insert, err := plan.resolve(reqs, existingByKey(existing), results)
		if err != nil || len(insert) == 0 {
			return nil, err
		}
		params, newIDs, err := insertParams(reqs, insert)
		if err != nil {
			return nil, err
		}
		txIns = NewTxInserter(ins)
		rows, err := txIns.InsertManyTx(ctx, tx, params)
		if err != nil {
			return nil, insertError(err)
		}
		if err := fillInserted(ctx, q.WithTx(tx), reqs, insert, newIDs, rows, check.TxStart, results); err != nil {
			return nil, err
		}
		return newIDs, nil
	})
	if err != nil {
		return nil, err
	}
	if txIns != nil {
		txIns.Committed()
	}
	plan.finish(results)
	return results, nil
}

// enqueuePlan is what an enqueue works out before asking the database
// anything: which requests look up an idempotency key, and which repeat an
// earlier request of the same batch.
type enqueuePlan struct {
	// sameAs[i] >= 0 when request i repeats the key of request sameAs[i].
	sameAs []int
	// lookups are the requests whose key is looked up (the first of each key).
	lookups []int
}

func planEnqueue(reqs []EnqueueRequest) enqueuePlan {
	p := enqueuePlan{sameAs: make([]int, len(reqs))}
	var firstWithKey map[store.IdempotencyKey]int
	for i, req := range reqs {
		p.sameAs[i] = -1
		if req.IdempotencyKey == "" {
			continue
		}
		if firstWithKey == nil {
			firstWithKey = map[store.IdempotencyKey]int{}
		}
		key := keyOf(req)
		if j, dup := firstWithKey[key]; dup {
			p.sameAs[i] = j
			continue
		}
		firstWithKey[key] = i
		if !req.KeyIsNew {
			p.lookups = append(p.lookups, i)
		}
	}
	return p
}

// keys are the idempotency keys the plan looks up.
func (p enqueuePlan) keys(reqs []EnqueueRequest) []store.IdempotencyKey {
	keys := make([]store.IdempotencyKey, len(p.lookups))
	for n, i := range p.lookups {
		keys[n] = keyOf(reqs[i])
	}
	return keys
}

func keyOf(req EnqueueRequest) store.IdempotencyKey {
	return store.IdempotencyKey{TenantID: req.Args.Tenant(), Type: req.Args.Kind(), Key: req.IdempotencyKey}
}

// resolve applies the idempotency rules in request order: a repeated key
// with another request hash is IDEMPOTENCY_CONFLICT, with the same one the
// existing job (Existing). It returns the requests left to insert.
func (p enqueuePlan) resolve(reqs []EnqueueRequest, existing map[store.IdempotencyKey]bpctype.Job, results []EnqueueResult) ([]int, error) {
	var insert []int
	for i, req := range reqs {
		if j := p.sameAs[i]; j >= 0 {
			if reqs[j].RequestHash != req.RequestHash {
				return nil, idempotencyConflict(req.IdempotencyKey)
			}
			continue
		}
		if req.IdempotencyKey != "" {
			if job, ok := existing[keyOf(req)]; ok {
				if job.RequestHash == nil || *job.RequestHash != req.RequestHash {
					return nil, idempotencyConflict(req.IdempotencyKey)
				}
				results[i] = EnqueueResult{Job: job, Existing: true}
				continue
			}
		}
		insert = append(insert, i)
	}
	return insert, nil
}

// finish gives the requests that repeat an earlier one of the batch that
// one's job.
func (p enqueuePlan) finish(results []EnqueueResult) {
	for i, j := range p.sameAs {
		if j >= 0 {
			results[i] = EnqueueResult{Job: results[j].Job, Existing: true}
		}
	}
}

func idempotencyConflict(key string) error {
	return errcode.New(errcode.IdempotencyConflict, "idempotency key %q was used for a different request", key)
}

func existingByKey(jobs []bpctype.Job) map[store.IdempotencyKey]bpctype.Job {
	m := make(map[store.IdempotencyKey]bpctype.Job, len(jobs))
	for _, j := range jobs {
		if j.IdempotencyKey != nil {
			m[store.IdempotencyKey{TenantID: j.TenantID, Type: j.Type, Key: *j.IdempotencyKey}] = j
		}
	}
	return m
}

// insertParams returns River's insert parameters of the requests to
// insert, with the SSOT job ids they are given.
func insertParams(reqs []EnqueueRequest, insert []int) ([]river.InsertManyParams, []uuid.UUID, error) {
	params := make([]river.InsertManyParams, len(insert))
	ids := make([]uuid.UUID, len(insert))
	for n, i := range insert {
		id := reqs[i].JobID
		if id == uuid.Nil {
			id = uuid.New()
		}
		opts, err := insertOpts(reqs[i], id)
		if err != nil {
			return nil, nil, err
		}
		params[n], ids[n] = river.InsertManyParams{Args: reqs[i].Args, InsertOpts: opts}, id
	}
	return params, ids, nil
}

// insertOpts merges the type's defaults with the request's overrides and
// carries the SSOT fields to the mirror trigger in River's metadata.
func insertOpts(req EnqueueRequest, jobID uuid.UUID) (*river.InsertOpts, error) {
	opts := req.Args.InsertOpts()
	if req.Priority != nil {
		opts.Priority = jobargs.RiverPriority(*req.Priority)
	}
	if req.MaxAttempts != nil {
		opts.MaxAttempts = *req.MaxAttempts
	}
	if req.ScheduledAt != nil {
		opts.ScheduledAt = *req.ScheduledAt
	}
	meta := jobMetadata{JobID: jobID}
	if req.IdempotencyKey != "" {
		key, hash := req.IdempotencyKey, req.RequestHash // not &req's fields: req would escape on every call
		meta.IdempotencyKey, meta.RequestHash = &key, &hash
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("error encoding job metadata: %w", err)
	}
	opts.Metadata = b
	return &opts, nil
}

// jobMetadata is the River metadata the mirror trigger reads the SSOT
// fields from. A struct rather than a map, for the CPU of enqueues by the
// thousand: its members are in the order json.Marshal sorts a map's keys,
// so that the bytes are the same.
type jobMetadata struct {
	IdempotencyKey *string   `json:"bpc_idempotency_key,omitempty"`
	JobID          uuid.UUID `json:"bpc_job_id"`
	RequestHash    *string   `json:"bpc_request_hash,omitempty"`
}

// insertError maps River's insert error: a unique violation of the
// idempotency key is a concurrent request's, ErrIdempotencyRace.
func insertError(err error) error {
	if store.IsUniqueViolation(err, "jobs_idempotency_key_uniq") {
		return ErrIdempotencyRace
	}
	return fmt.Errorf("error inserting River jobs: %w", err)
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// insertedJob is the SSOT row the mirror's insert trigger writes for row,
// a River job inserted a moment ago in the transaction begun at txStart
// (the trigger's now()): the trigger's SQL (bpc_mirror_river_insert, in
// the migrations) done in Go, so that the row need not be read back. ok is
// false for a row that is not a fresh insert — a unique duplicate River
// skipped, or a state or history an insert does not have — whose SSOT row
// must be read. Times are in time.Local, as pgx scans timestamptz, so that
// the job encodes to the bytes GET /v1/jobs/{id} answers.
func insertedJob(row *rivertype.JobInsertResult, req EnqueueRequest, jobID uuid.UUID, txStart time.Time) (bpctype.Job, bool) {
	if row == nil || row.Job == nil || row.UniqueSkippedAsDuplicate {
		return bpctype.Job{}, false
	}
	r := row.Job
	switch r.State {
	case rivertype.JobStateAvailable, rivertype.JobStateScheduled, rivertype.JobStatePending:
	default:
		return bpctype.Job{}, false
	}
	if r.AttemptedAt != nil || r.FinalizedAt != nil || len(r.Errors) > 0 || r.Attempt != 0 {
		return bpctype.Job{}, false
	}
	job := bpctype.Job{
		JobID:       jobID,
		TenantID:    req.Args.Tenant(),
		Type:        r.Kind,
		Status:      bpctype.StatusOf(r.State, false),
		Priority:    int16(r.Priority - 1), //nolint:gosec // River bounds it to 1..4
		MaxAttempts: int32(r.MaxAttempts),  //nolint:gosec // a smallint in river_job
		Payload:     r.EncodedArgs,
		Queue:       r.Queue,
		ScheduledAt: r.ScheduledAt.Local(),
		RiverJobID:  r.ID,
		CreatedAt:   r.CreatedAt.Local(),
		// GREATEST(created_at, now()): River stamps created_at with this
		// process's clock, after the transaction began.
		UpdatedAt: maxTime(txStart, r.CreatedAt).Local(),
	}
	if req.IdempotencyKey != "" {
		key, hash := req.IdempotencyKey, req.RequestHash
		job.IdempotencyKey, job.RequestHash = &key, &hash
	}
	return job, true
}

// fillInserted puts the SSOT job of each inserted request into results:
// computed from River's row, or read back when one cannot be.
func fillInserted(ctx context.Context, q *store.Queries, reqs []EnqueueRequest, insert []int, ids []uuid.UUID, rows []*rivertype.JobInsertResult, txStart time.Time, results []EnqueueResult) error {
	if len(rows) == len(insert) {
		computed := true
		for n, i := range insert {
			job, ok := insertedJob(rows[n], reqs[i], ids[n], txStart)
			if !ok {
				computed = false
				break
			}
			results[i].Job = job
		}
		if computed {
			return nil
		}
	}
	return readBack(ctx, q, insert, ids, results)
}

// readBack reads the SSOT rows of the jobs ids just inserted for the
// requests insert into results.
func readBack(ctx context.Context, q *store.Queries, insert []int, ids []uuid.UUID, results []EnqueueResult) error {
	jobs, err := q.LiveJobs(ctx, ids)
	if err != nil {
		return err
	}
	byID := make(map[uuid.UUID]bpctype.Job, len(jobs))
	for _, j := range jobs {
		byID[j.JobID] = j
	}
	for n, i := range insert {
		job, ok := byID[ids[n]]
		if !ok {
			return store.MissingSSOTRow(ids[n])
		}
		results[i].Job = job
	}
	return nil
}

// CheckIdempotencyKey refuses an idempotency key longer than
// MaxIdempotencyKeyChars; field names where the request carried it.
func CheckIdempotencyKey(field, key string) error {
	if len(key) > MaxIdempotencyKeyChars {
		return errcode.Invalid(field, "must be at most %d characters", MaxIdempotencyKeyChars)
	}
	return nil
}

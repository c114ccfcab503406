package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/jobargs"
)

// MissingRefError is the answer of EnqueueChecked for an id that does not
// exist in its job's tenant: Ref, named by request Index.
type MissingRefError struct {
	Index int
	Ref   jobargs.Ref
}

func (e *MissingRefError) Error() string {
	return fmt.Sprintf("%s %s not found", e.Ref.Entity, e.Ref.ID)
}

// enqueuePlan is what EnqueueTx and EnqueueChecked work out before asking
// the database anything: which requests look up an idempotency key, and
// which repeat an earlier request of the same batch.
type enqueuePlan struct {
	// sameAs[i] >= 0 when request i repeats the key of request sameAs[i].
	sameAs []int
	// lookups are the requests whose key is looked up (the first of each key).
	lookups []int
}

func planEnqueue(reqs []EnqueueRequest) enqueuePlan {
	p := enqueuePlan{sameAs: make([]int, len(reqs))}
	var firstWithKey map[idemKey]int
	for i, req := range reqs {
		p.sameAs[i] = -1
		if req.IdempotencyKey == "" {
			continue
		}
		if firstWithKey == nil {
			firstWithKey = map[idemKey]int{}
		}
		key := idemKey{req.Args.Tenant(), req.Args.Kind(), req.IdempotencyKey}
		if j, dup := firstWithKey[key]; dup {
			p.sameAs[i] = j
			continue
		}
		firstWithKey[key] = i
		p.lookups = append(p.lookups, i)
	}
	return p
}

// idemKey is what an idempotency key is unique within (jobs_idempotency_key_uniq).
type idemKey struct {
	tenantID uuid.UUID
	kind     string
	key      string
}

func keyOf(req EnqueueRequest) idemKey {
	return idemKey{req.Args.Tenant(), req.Args.Kind(), req.IdempotencyKey}
}

// resolve applies the idempotency rules in request order: a repeated key
// with another request hash is IDEMPOTENCY_CONFLICT, with the same one the
// existing job (Existing). It returns the requests left to insert.
func (p enqueuePlan) resolve(reqs []EnqueueRequest, existing map[idemKey]Job, results []EnqueueResult) ([]int, error) {
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

// idempotencySQL returns the jobs of the (tenant, type, key) triples, one
// probe of each table's partial index on the key (the IS NOT NULL lets the
// planner use them); the view jobs is jobs_live and jobs_history.
const idempotencySQL = `SELECT j.* FROM unnest($1::uuid[], $2::text[], $3::text[]) AS k(k_tenant, k_type, k_key)
	CROSS JOIN LATERAL (SELECT ` + jobColumns + ` FROM jobs
		WHERE tenant_id = k_tenant AND type = k_type AND idempotency_key = k_key AND idempotency_key IS NOT NULL) AS j`

func idempotencyArgs(reqs []EnqueueRequest, lookups []int) []any {
	tenants := make([][16]byte, len(lookups))
	kinds := make([]string, len(lookups))
	keys := make([]string, len(lookups))
	for n, i := range lookups {
		tenants[n], kinds[n], keys[n] = reqs[i].Args.Tenant(), reqs[i].Args.Kind(), reqs[i].IdempotencyKey
	}
	return []any{tenants, kinds, keys}
}

func existingByKey(jobs []Job) map[idemKey]Job {
	m := make(map[idemKey]Job, len(jobs))
	for _, j := range jobs {
		if j.IdempotencyKey != nil {
			m[idemKey{j.TenantID, j.Type, *j.IdempotencyKey}] = j
		}
	}
	return m
}

// params returns River's insert parameters of the requests to insert, with
// the SSOT job ids they are given.
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

// insertError maps River's insert error: a unique violation of the
// idempotency key is a concurrent request's, ErrIdempotencyRace.
func insertError(err error) error {
	if IsUniqueViolation(err, "jobs_idempotency_key_uniq") {
		return ErrIdempotencyRace
	}
	return fmt.Errorf("error inserting River jobs: %w", err)
}

func missingSSOTRow(jobID uuid.UUID) error {
	return errcode.New(errcode.Internal, "SSOT row for job %s missing after insert: is the mirror trigger installed?", jobID)
}

// insertedJob is the SSOT row the mirror's insert trigger writes for row,
// a River job inserted a moment ago in the transaction begun at txStart
// (the trigger's now()): the trigger's SQL (bpc_mirror_river_insert, in
// the migrations) done in Go, so that the row need not be read back. ok is
// false for a row that is not a fresh insert — a unique duplicate River
// skipped, or a state or history an insert does not have — whose SSOT row
// must be read. Times are in time.Local, as pgx scans timestamptz, so that
// the job encodes to the bytes GET /v1/jobs/{id} answers.
func insertedJob(row *rivertype.JobInsertResult, req EnqueueRequest, jobID uuid.UUID, txStart time.Time) (Job, bool) {
	if row == nil || row.Job == nil || row.UniqueSkippedAsDuplicate {
		return Job{}, false
	}
	r := row.Job
	switch r.State {
	case rivertype.JobStateAvailable, rivertype.JobStateScheduled, rivertype.JobStatePending:
	default:
		return Job{}, false
	}
	if r.AttemptedAt != nil || r.FinalizedAt != nil || len(r.Errors) > 0 || r.Attempt != 0 {
		return Job{}, false
	}
	job := Job{
		JobID:       jobID,
		TenantID:    req.Args.Tenant(),
		Type:        r.Kind,
		Status:      StatusOf(r.State, false),
		Priority:    int16(r.Priority - 1), //nolint:gosec // River bounds it to 1..4
		MaxAttempts: int32(r.MaxAttempts),  //nolint:gosec // a smallint in river_job
		Payload:     r.EncodedArgs,
		Queue:       r.Queue,
		ScheduledAt: r.ScheduledAt.Local(),
		RiverJobID:  r.ID,
		CreatedAt:   r.CreatedAt.Local(),
		UpdatedAt:   txStart.Local(),
	}
	if req.IdempotencyKey != "" {
		key, hash := req.IdempotencyKey, req.RequestHash
		job.IdempotencyKey, job.RequestHash = &key, &hash
	}
	return job, true
}

// EnqueueChecked inserts the requested jobs as EnqueueTx does, in a
// transaction of its own, for a caller outside the service (the admin
// API): it also refuses a request whose tenant does not exist (NOT_FOUND)
// or whose args name an id (jobargs.Args.Refs) that does not exist in that
// tenant (*MissingRefError), and it publishes the queues inserted into once
// committed when ins publishes (Publishing). A transaction that lost a race
// on an idempotency key is run again, at most three times.
//
// It costs River's own Insert's three round trips: the tenant, id and
// idempotency checks travel with the BEGIN, the verification that the
// mirror wrote every SSOT row with the COMMIT, and the SSOT rows are not
// read back but computed from River's (insertedJob). On Queries made
// WithTx it runs in that transaction instead (and the owner publishes).
func (q *Queries) EnqueueChecked(ctx context.Context, ins Inserter, reqs []EnqueueRequest) ([]EnqueueResult, error) {
	pool, ok := q.db.(*pgxpool.Pool)
	if !ok {
		return q.enqueueCheckedInTx(ctx, ins, reqs)
	}
	var err error
	for range 3 {
		var results []EnqueueResult
		results, err = enqueueOwnTx(ctx, pool, ins, reqs)
		if !errors.Is(err, ErrIdempotencyRace) {
			return results, err
		}
	}
	return nil, err
}

// enqueueCheckedInTx is EnqueueChecked inside the caller's transaction.
func (q *Queries) enqueueCheckedInTx(ctx context.Context, ins Inserter, reqs []EnqueueRequest) ([]EnqueueResult, error) {
	tenants, refs, owners := checksOf(reqs)
	if len(tenants) > 0 {
		var missing uuid.UUID
		if err := q.db.QueryRow(ctx, missingTenantSQL, tenants).Scan((*[16]byte)(&missing)); err == nil {
			return nil, notFound(pgx.ErrNoRows, "tenant", missing)
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("error checking tenants: %w", err)
		}
	}
	i, err := q.MissingRef(ctx, refs)
	if err != nil {
		return nil, err
	}
	if i >= 0 {
		return nil, &MissingRefError{Index: owners[i], Ref: refs[i]}
	}
	return q.EnqueueTx(ctx, ins, reqs)
}

// missingTenantSQL returns the first tenant id that does not exist.
const missingTenantSQL = `SELECT t.id FROM unnest($1::uuid[]) WITH ORDINALITY AS t(id, n)
	WHERE NOT EXISTS (SELECT 1 FROM tenants x WHERE x.tenant_id = t.id) ORDER BY t.n LIMIT 1`

// enqueueChecks is what EnqueueChecked asks with its BEGIN, in one
// statement: the transaction's start (the mirror's updated_at), the first
// tenant that does not exist and the ordinal (1-based) of the first ref
// that does not (NULL when all do). Its refs are probed one subquery per
// entity present, so that Postgres, which plans the statement anew for
// each request, plans only those (missingRefSQL's CASE over every entity
// cost more backend CPU to plan than the whole insert).
func enqueueChecks(tenants [][16]byte, refs []jobargs.Ref) (string, []any, error) {
	args := []any{tenants}
	var present []jobargs.Entity
	byEntity := map[jobargs.Entity]*refColumns{}
	for i, r := range refs {
		if _, ok := refTables[r.Entity]; !ok {
			return "", nil, fmt.Errorf("error checking references: unknown entity %q", r.Entity)
		}
		c := byEntity[r.Entity]
		if c == nil {
			c = &refColumns{}
			byEntity[r.Entity] = c
			present = append(present, r.Entity)
		}
		c.tenants = append(c.tenants, r.TenantID)
		c.ids = append(c.ids, r.ID)
		c.ordinals = append(c.ordinals, int32(i+1)) //nolint:gosec // at most a batch's refs
	}
	slices.Sort(present)
	key := fmt.Sprint(present)
	sql, ok := enqueueChecksSQL.Load(key)
	if !ok {
		probes := make([]string, len(present))
		for k, e := range present {
			t, n := refTables[e], 2+3*k
			probes[k] = fmt.Sprintf(`(SELECT min(r.n) FROM unnest($%d::uuid[], $%d::uuid[], $%d::int[]) AS r(tenant_id, id, n)
	WHERE NOT EXISTS (SELECT 1 FROM %s x WHERE x.tenant_id = r.tenant_id AND x.%s = r.id))`, n, n+1, n+2, t[0], t[1])
		}
		refsSQL := "NULL::int"
		if len(probes) > 0 {
			refsSQL = "least(" + strings.Join(probes, ", ") + ")"
		}
		sql, _ = enqueueChecksSQL.LoadOrStore(key, `SELECT now(), (`+missingTenantSQL+`), `+refsSQL)
	}
	for _, e := range present {
		c := byEntity[e]
		args = append(args, c.tenants, c.ids, c.ordinals)
	}
	return sql.(string), args, nil
}

// refColumns are the parameters of one entity's probe in enqueueChecks.
type refColumns struct {
	tenants, ids [][16]byte
	ordinals     []int32
}

// enqueueChecksSQL caches enqueueChecks' statements by the entities they
// probe.
var enqueueChecksSQL sync.Map

// verifyMirroredSQL fails (division by zero) unless the mirror wrote an
// SSOT row for each of the $2 job ids $1, so that the COMMIT sent after it
// in the same round trip does not run. One probe of jobs' primary key per
// id: a plan over "job_id = ANY($1)" that Postgres cached while jobs was
// small read all of it for every batch once it was not
// (BenchmarkHTTPEnqueue's batches slowed round after round).
const verifyMirroredSQL = `SELECT 1 / (count(*) = $2)::int FROM unnest($1::uuid[]) AS i(id)
	WHERE EXISTS (SELECT 1 FROM jobs_live WHERE job_id = i.id)`

// checksOf lists the distinct tenants of reqs, in order, and the ids their
// args name with the index of the request naming each.
func checksOf(reqs []EnqueueRequest) ([][16]byte, []jobargs.Ref, []int) {
	var tenants [][16]byte
	var refs []jobargs.Ref
	var owners []int
	for i, req := range reqs {
		t := req.Args.Tenant()
		if len(tenants) == 0 || (tenants[len(tenants)-1] != t && !containsID(tenants, t)) {
			tenants = append(tenants, t)
		}
		for _, r := range req.Args.Refs() {
			refs = append(refs, r)
			owners = append(owners, i)
		}
	}
	return tenants, refs, owners
}

func containsID(ids [][16]byte, id [16]byte) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// enqueueOwnTx is one attempt of EnqueueChecked on a connection of pool.
func enqueueOwnTx(ctx context.Context, pool *pgxpool.Pool, ins Inserter, reqs []EnqueueRequest) (results []EnqueueResult, err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("error acquiring a connection: %w", err)
	}
	// A connection still in a transaction when released (a failed
	// rollback) is closed by the pool, never reused.
	defer conn.Release()
	tx := &batchTx{conn: conn.Conn()}
	defer func() {
		if err != nil {
			tx.abort()
		}
	}()

	plan := planEnqueue(reqs)
	tenants, refs, owners := checksOf(reqs)
	checksSQL, checksArgs, err := enqueueChecks(tenants, refs)
	if err != nil {
		return nil, err
	}
	var (
		txStart       time.Time
		missingTenant *[16]byte
		missingRef    *int
		existing      map[idemKey]Job
	)
	b := &pgx.Batch{}
	b.Queue("begin")
	b.Queue(checksSQL, checksArgs...).QueryRow(func(row pgx.Row) error {
		return row.Scan(&txStart, &missingTenant, &missingRef)
	})
	if len(plan.lookups) > 0 {
		b.Queue(idempotencySQL, idempotencyArgs(reqs, plan.lookups)...).Query(func(rows pgx.Rows) error {
			jobs, err := pgx.CollectRows(rows, pgx.RowToStructByName[Job])
			existing = existingByKey(jobs)
			return err
		})
	}
	tx.began = true
	if err := tx.conn.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("error checking enqueue requests: %w", err)
	}
	switch {
	case missingTenant != nil:
		return nil, notFound(pgx.ErrNoRows, "tenant", uuid.UUID(*missingTenant))
	case missingRef != nil:
		return nil, &MissingRefError{Index: owners[*missingRef-1], Ref: refs[*missingRef-1]}
	}

	results = make([]EnqueueResult, len(reqs))
	insert, err := plan.resolve(reqs, existing, results)
	if err != nil {
		return nil, err
	}
	var txIns *TxInserter
	var newIDs []uuid.UUID
	if len(insert) > 0 {
		var params []river.InsertManyParams
		params, newIDs, err = insertParams(reqs, insert)
		if err != nil {
			return nil, err
		}
		txIns = NewTxInserter(ins)
		rows, err := txIns.InsertManyTx(ctx, tx, params)
		if err != nil {
			return nil, insertError(err)
		}
		if err := fillInserted(ctx, tx, reqs, insert, newIDs, rows, txStart, results); err != nil {
			return nil, err
		}
	}
	if err := tx.commit(ctx, newIDs); err != nil {
		return nil, err
	}
	if txIns != nil {
		txIns.Committed()
	}
	plan.finish(results)
	return results, nil
}

// fillInserted puts the SSOT job of each inserted request into results:
// computed from River's row, or read back when one cannot be.
func fillInserted(ctx context.Context, db DBTX, reqs []EnqueueRequest, insert []int, ids []uuid.UUID, rows []*rivertype.JobInsertResult, txStart time.Time, results []EnqueueResult) error {
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
	return readBack(ctx, db, insert, ids, results)
}

// readBack reads the SSOT rows of the jobs ids just inserted for the
// requests insert into results.
func readBack(ctx context.Context, db DBTX, insert []int, ids []uuid.UUID, results []EnqueueResult) error {
	jobs, err := list[Job](ctx, db, "enqueued jobs", `SELECT `+jobColumns+` FROM jobs_live WHERE job_id = ANY($1)`, ids)
	if err != nil {
		return err
	}
	byID := make(map[uuid.UUID]Job, len(jobs))
	for _, j := range jobs {
		byID[j.JobID] = j
	}
	for n, i := range insert {
		job, ok := byID[ids[n]]
		if !ok {
			return missingSSOTRow(ids[n])
		}
		results[i].Job = job
	}
	return nil
}

func noRowsOK(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	return err
}

// batchTx is a transaction begun by a batch that carries its BEGIN with
// the queries that open it, and committed by a batch that carries its
// COMMIT with the queries that close it: pgx's own transactions spend a
// round trip on each. It is a pgx.Tx so that River can insert in it; it
// has no savepoints (Begin), which River's inserts do not use.
type batchTx struct {
	conn  *pgx.Conn
	began bool
	done  bool
}

var _ pgx.Tx = (*batchTx)(nil)

// errNoSavepoints is what batchTx.Begin answers.
var errNoSavepoints = errors.New("store: an enqueue transaction has no savepoints")

func (t *batchTx) Begin(context.Context) (pgx.Tx, error) { return nil, errNoSavepoints }

// commit verifies that the mirror wrote the SSOT row of each job ids
// (none: nothing to verify) and commits, in one round trip.
func (t *batchTx) commit(ctx context.Context, ids []uuid.UUID) error {
	b := &pgx.Batch{}
	if len(ids) > 0 {
		arr := make([][16]byte, len(ids))
		for i, id := range ids {
			arr[i] = id
		}
		b.Queue(verifyMirroredSQL, arr, len(ids))
	}
	b.Queue("commit")
	err := t.conn.SendBatch(ctx, b).Close()
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		t.done = true
		return nil
	case len(ids) > 0 && errors.As(err, &pgErr) && pgErr.Code == "22012":
		return missingSSOTRow(ids[0])
	}
	return fmt.Errorf("error committing enqueue: %w", err)
}

// Commit commits the transaction.
func (t *batchTx) Commit(ctx context.Context) error { return t.commit(ctx, nil) }

// Rollback rolls the transaction back (nothing when it has ended).
func (t *batchTx) Rollback(ctx context.Context) error {
	if t.done || !t.began {
		return nil
	}
	t.done = true
	_, err := t.conn.Exec(ctx, "rollback")
	return err
}

// abort rolls back after a failure, even when ctx has ended.
func (t *batchTx) abort() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = t.Rollback(ctx)
}

func (t *batchTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	return t.conn.CopyFrom(ctx, table, cols, src)
}

func (t *batchTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.conn.SendBatch(ctx, b)
}

func (t *batchTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

func (t *batchTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.conn.Prepare(ctx, name, sql)
}

func (t *batchTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.conn.Exec(ctx, sql, args...)
}

func (t *batchTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.conn.Query(ctx, sql, args...)
}

func (t *batchTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.conn.QueryRow(ctx, sql, args...)
}

func (t *batchTx) Conn() *pgx.Conn { return t.conn }

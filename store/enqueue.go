package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
)

// IdempotencyKey is what an idempotency key is unique within
// (jobs_idempotency_key_uniq): the tenant, the job type and the key.
type IdempotencyKey struct {
	TenantID uuid.UUID
	Type     string
	Key      string
}

// idempotencySQL returns the jobs of the (tenant, type, key) triples, one
// probe of each table's partial index on the key (the IS NOT NULL lets the
// planner use them); the view jobs is jobs_live and jobs_history. OFFSET 0
// keeps the lateral subquery whole, so that its conditions reach both
// branches of the view: since jobs_live is a join, the planner would
// otherwise pull the subquery up and join every keyed row of jobs_live and
// jobs_history with the keys (found in review: 0.08 → 197 ms for 10 keys
// on 17 000 live rows).
const idempotencySQL = `SELECT j.* FROM unnest($1::uuid[], $2::text[], $3::text[]) AS k(k_tenant, k_type, k_key)
	CROSS JOIN LATERAL (SELECT ` + jobColumns + ` FROM jobs
		WHERE tenant_id = k_tenant AND type = k_type AND idempotency_key = k_key AND idempotency_key IS NOT NULL
		OFFSET 0) AS j`

func idempotencyArgs(keys []IdempotencyKey) []any {
	tenants := make([][16]byte, len(keys))
	kinds := make([]string, len(keys))
	ks := make([]string, len(keys))
	for n, k := range keys {
		tenants[n], kinds[n], ks[n] = k.TenantID, k.Type, k.Key
	}
	return []any{tenants, kinds, ks}
}

// JobsByIdempotencyKey returns the jobs enqueued under keys, live or
// history, in no particular order; a key without a job has none.
func (q *Queries) JobsByIdempotencyKey(ctx context.Context, keys []IdempotencyKey) ([]bpctype.Job, error) {
	return list[bpctype.Job](ctx, q.db, "jobs with idempotency keys", idempotencySQL, idempotencyArgs(keys)...)
}

// QueueJobsByIdempotencyKey queues JobsByIdempotencyKey's statement on b;
// dst holds its answer once b has run.
func QueueJobsByIdempotencyKey(b *pgx.Batch, keys []IdempotencyKey, dst *[]bpctype.Job) {
	b.Queue(idempotencySQL, idempotencyArgs(keys)...).Query(func(rows pgx.Rows) error {
		jobs, err := pgx.CollectRows(rows, pgx.RowToStructByName[bpctype.Job])
		*dst = jobs
		return err
	})
}

// LiveJobs returns the SSOT rows of the jobs ids whose River jobs exist,
// in no particular order; an id without one has none.
func (q *Queries) LiveJobs(ctx context.Context, ids []uuid.UUID) ([]bpctype.Job, error) {
	return list[bpctype.Job](ctx, q.db, "enqueued jobs", `SELECT `+jobColumns+` FROM jobs_live WHERE job_id = ANY($1)`, ids)
}

// MissingSSOTRow is the error of a River job inserted without the SSOT row
// the mirror's insert trigger writes.
func MissingSSOTRow(jobID uuid.UUID) error {
	return errcode.New(errcode.Internal, "SSOT row for job %s missing after insert: is the mirror trigger installed?", jobID)
}

// InBatchTx runs fn in a transaction on a connection of q's pool whose
// BEGIN travels, in one round trip, with the statements open queues, and
// whose COMMIT travels with the check that the mirror wrote the SSOT row of
// each job id fn returns: pgx's own transactions spend a round trip on each.
// fn sees open's answers. The transaction has no savepoints (pgx.Tx.Begin
// fails), which River's inserts do not use. q must be made on a pool.
func (q *Queries) InBatchTx(ctx context.Context, open func(b *pgx.Batch) error, fn func(tx pgx.Tx) (mirrored []uuid.UUID, err error)) (err error) {
	pool, ok := q.db.(*pgxpool.Pool)
	if !ok {
		return errors.New("store: a batch transaction needs Queries made on a pool")
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("error acquiring a connection: %w", err)
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
	b := &pgx.Batch{}
	b.Queue("begin")
	b.Queue(keyProbePlansSQL)
	if err := open(b); err != nil {
		return err
	}
	tx.began = true
	if err := tx.conn.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("error opening a transaction: %w", err)
	}
	ids, err := fn(tx)
	if err != nil {
		return err
	}
	return tx.commit(ctx, ids)
}

// keyProbePlansSQL sets, for the rest of the transaction, how Postgres
// plans the enqueue's statements. They are all probes by key (the tenant,
// the ids a payload names, the idempotency keys, the SSOT rows just
// written) over arrays whose size only the bound values tell:
//
//   - force_generic_plan: Postgres otherwise plans such a statement anew
//     on every execution (its estimate of the generic plan, for an array
//     of unknown size, never beats the custom one), which cost more
//     backend CPU than the probes themselves (~290 µs against ~95 for the
//     tenant and ref check, measured on one connection);
//   - no sequential scan, hash join or merge join: a generic plan is
//     cached per connection and kept until the table is analysed, and one
//     made while a table was small (a fresh database, a test) reads the
//     whole table on every probe once it is not. BenchmarkHTTPEnqueue's
//     check that the mirror wrote the SSOT row ran a hash semi-join over
//     all of jobs_live per request (a sequential scan, or with those off a
//     full scan of another index), its rate falling round after round.
//     With them off the plan is a nested loop of index probes, right at
//     any size. The mirror's update trigger pins its plan the same way.
//
// set_config(…, true) is SET LOCAL: it ends with the transaction, so the
// connection goes back to the pool with its settings as they were. River's
// insert in the same transaction has no join or scan to change.
const keyProbePlansSQL = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true),
	set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', true),
	set_config('enable_mergejoin', 'off', true)`

// verifyMirroredSQL fails (division by zero) unless the mirror wrote an
// SSOT row for each of the $2 job ids $1, so that the COMMIT sent after it
// in the same round trip does not run. One probe of jobs' primary key per
// id: a plan over "job_id = ANY($1)" that Postgres cached while jobs was
// small read all of it for every batch once it was not
// (BenchmarkHTTPEnqueue's batches slowed round after round).
const verifyMirroredSQL = `SELECT 1 / (count(*) = $2)::int FROM unnest($1::uuid[]) AS i(id)
	WHERE EXISTS (SELECT 1 FROM jobs_live_fixed WHERE job_id = i.id)`

// firstUnmirroredSQL is the first of the job ids $N (in their order)
// whose SSOT row the mirror did not write, or NULL: what VerifyMirrored and
// the lease fence (FenceLeaseMirrored) check. %d is the parameter's number.
const firstUnmirroredSQL = `(SELECT i.id FROM unnest($%d::uuid[]) WITH ORDINALITY AS i(id, n)
	WHERE NOT EXISTS (SELECT 1 FROM jobs_live_fixed WHERE job_id = i.id) ORDER BY i.n LIMIT 1)`

// VerifyMirrored fails with MissingSSOTRow, naming the first id without
// its row, unless the mirror wrote an SSOT row for each of ids (none: no
// round trip).
func (q *Queries) VerifyMirrored(ctx context.Context, ids []uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	var missing pgtype.UUID
	if err := q.db.QueryRow(ctx, "SELECT "+fmt.Sprintf(firstUnmirroredSQL, 1), uuidArray(ids)).Scan(&missing); err != nil {
		return fmt.Errorf("error checking the SSOT rows of jobs: %w", err)
	}
	if missing.Valid {
		return MissingSSOTRow(missing.Bytes)
	}
	return nil
}

// uuidArray is ids as pgx encodes a uuid[] parameter.
func uuidArray(ids []uuid.UUID) [][16]byte {
	arr := make([][16]byte, len(ids))
	for i, id := range ids {
		arr[i] = id
	}
	return arr
}

// InLazyTx runs fn in a transaction on a connection of q's pool whose BEGIN
// is sent with the transaction's first statement: in the same round trip
// when that is a batch (SendBatch), else just before it. A worker's step
// that opens with a batch (the lock of the row it changes and what it
// reads with it) saves pgx's round trip for the BEGIN. It commits when fn
// returns nil. The transaction has no savepoints (pgx.Tx.Begin fails). On
// Queries not made on a pool (a transaction) it is InTx.
func (q *Queries) InLazyTx(ctx context.Context, fn func(tx pgx.Tx) error) (err error) {
	pool, ok := q.db.(*pgxpool.Pool)
	if !ok {
		return q.InTx(ctx, fn)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("error acquiring a connection: %w", err)
	}
	// A connection still in a transaction when released (a failed
	// rollback) is closed by the pool, never reused.
	defer conn.Release()
	tx := &lazyTx{batchTx{conn: conn.Conn()}}
	defer func() {
		if err != nil {
			tx.abort()
		}
	}()
	if err := fn(tx); err != nil {
		return err
	}
	if !tx.began {
		return nil // nothing ran: nothing to commit
	}
	tag, err := tx.conn.Exec(ctx, "commit")
	if err := committed(tag, err); err != nil {
		return fmt.Errorf("error committing: %w", err)
	}
	tx.done = true
	return nil
}

// committed is the outcome of a COMMIT: Postgres answers the COMMIT of a
// transaction that a failed statement aborted with the tag ROLLBACK and no
// error, which is pgx.ErrTxCommitRollback (as pgx's own Commit says), never
// success — whatever fn did with that statement's error.
func committed(tag pgconn.CommandTag, err error) error {
	if err == nil && tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return err
}

// lazyTx is InLazyTx's transaction: a batchTx whose BEGIN goes out with its
// first statement.
type lazyTx struct{ batchTx }

var _ pgx.Tx = (*lazyTx)(nil)

// begin sends the BEGIN on its own, before a statement that cannot carry it.
func (t *lazyTx) begin(ctx context.Context) error {
	if t.began {
		return nil
	}
	t.began = true
	if _, err := t.conn.Exec(ctx, "begin"); err != nil {
		return fmt.Errorf("error opening a transaction: %w", err)
	}
	return nil
}

// SendBatch sends b, with the BEGIN queued first when the transaction has
// not begun; its caller reads b's results as its own.
func (t *lazyTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.began {
		return t.conn.SendBatch(ctx, b)
	}
	t.began = true
	withBegin := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(b.QueuedQueries)+1)}
	withBegin.Queue("begin")
	withBegin.QueuedQueries = append(withBegin.QueuedQueries, b.QueuedQueries...)
	return &afterBegin{BatchResults: t.conn.SendBatch(ctx, withBegin)}
}

// afterBegin reads past the BEGIN's result before the first result its
// caller asks for.
type afterBegin struct {
	pgx.BatchResults
	skipped bool
	err     error
}

func (r *afterBegin) skip() error {
	if !r.skipped {
		r.skipped = true
		_, r.err = r.BatchResults.Exec()
	}
	return r.err
}

func (r *afterBegin) Exec() (pgconn.CommandTag, error) {
	if err := r.skip(); err != nil {
		return pgconn.CommandTag{}, err
	}
	return r.BatchResults.Exec()
}

func (r *afterBegin) Query() (pgx.Rows, error) {
	if err := r.skip(); err != nil {
		return nil, err
	}
	return r.BatchResults.Query()
}

func (r *afterBegin) QueryRow() pgx.Row {
	if err := r.skip(); err != nil {
		return errRow{err}
	}
	return r.BatchResults.QueryRow()
}

// Close runs the queued callbacks (the BEGIN has none) and reads what is
// left.
func (r *afterBegin) Close() error { return r.BatchResults.Close() }

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

func (t *lazyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := t.begin(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return t.conn.Exec(ctx, sql, args...)
}

func (t *lazyTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.begin(ctx); err != nil {
		return nil, err
	}
	return t.conn.Query(ctx, sql, args...)
}

func (t *lazyTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := t.begin(ctx); err != nil {
		return errRow{err}
	}
	return t.conn.QueryRow(ctx, sql, args...)
}

func (t *lazyTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.begin(ctx); err != nil {
		return 0, err
	}
	return t.conn.CopyFrom(ctx, table, cols, src)
}

func (t *lazyTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := t.begin(ctx); err != nil {
		return nil, err
	}
	return t.conn.Prepare(ctx, name, sql)
}

// Commit commits the transaction (nothing when it never began).
func (t *lazyTx) Commit(ctx context.Context) error {
	if !t.began || t.done {
		return nil
	}
	t.done = true
	return committed(t.conn.Exec(ctx, "commit"))
}

// batchTx is a transaction begun by a batch that carries its BEGIN with
// the queries that open it, and committed by a batch that carries its
// COMMIT with the queries that close it. It is a pgx.Tx so that River can
// insert in it; it has no savepoints (Begin).
type batchTx struct {
	conn  *pgx.Conn
	began bool
	done  bool
}

var _ pgx.Tx = (*batchTx)(nil)

// errNoSavepoints is what batchTx.Begin answers.
var errNoSavepoints = errors.New("store: a batch transaction has no savepoints")

func (t *batchTx) Begin(context.Context) (pgx.Tx, error) { return nil, errNoSavepoints }

// commit verifies that the mirror wrote the SSOT row of each job ids
// (none: nothing to verify) and commits, in one round trip.
func (t *batchTx) commit(ctx context.Context, ids []uuid.UUID) error {
	b := &pgx.Batch{}
	if len(ids) > 0 {
		b.Queue(verifyMirroredSQL, uuidArray(ids), len(ids))
	}
	b.Queue("commit")
	br := t.conn.SendBatch(ctx, b)
	var err error
	if len(ids) > 0 {
		_, err = br.Exec()
	}
	if err == nil {
		err = committed(br.Exec())
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		t.done = true
		return nil
	case len(ids) > 0 && errors.As(err, &pgErr) && pgErr.Code == "22012":
		return MissingSSOTRow(ids[0])
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

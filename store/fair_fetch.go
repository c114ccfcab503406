package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// fairFetchLock is the advisory lock key of a queue's fair fetch, taken with
// the hash of the schema and queue as the second key: the per-tenant cap
// counts running jobs and then locks more, which must not interleave with
// another process doing the same for the same queue ("bpcf").
const fairFetchLock = 0x62706366

// maxFairFetchPasses bounds the passes of one fetch; River fetches again
// soon for what is left.
const maxFairFetchPasses = 4

// FairFetchParams is one fetch of River jobs for a queue: River's
// JobGetAvailable parameters plus the per-tenant cap.
type FairFetchParams struct {
	// Schema qualifies River's table when set (River's own Schema option);
	// empty uses the search path, as the service does.
	Schema string
	Queue  string
	// Kinds restricts the fetch to these kinds; nil allows every kind and
	// an empty, non-nil slice none (River's semantics).
	Kinds []string
	// Now is River's clock when it has one (tests); nil is the database's.
	Now *time.Time
	// Max is how many jobs the producer has room for.
	Max int
	// TenantCap, when positive, is the most jobs of one tenant running in
	// the queue at once, across every process fetching it.
	TenantCap int
	// ClientID is appended to each job's attempted_by, which keeps at most
	// MaxAttemptedBy entries.
	ClientID       string
	MaxAttemptedBy int
}

// FetchedRiverJob is a river_job row as the fair fetch moved it to running,
// columns undecoded: the caller decodes them as River's driver does.
type FetchedRiverJob struct {
	ID           int64       `db:"id"`
	Args         []byte      `db:"args"`
	Attempt      int16       `db:"attempt"`
	AttemptedAt  *time.Time  `db:"attempted_at"`
	AttemptedBy  []string    `db:"attempted_by"`
	CreatedAt    time.Time   `db:"created_at"`
	Errors       [][]byte    `db:"errors"`
	FinalizedAt  *time.Time  `db:"finalized_at"`
	Kind         string      `db:"kind"`
	MaxAttempts  int16       `db:"max_attempts"`
	Metadata     []byte      `db:"metadata"`
	Priority     int16       `db:"priority"`
	Queue        string      `db:"queue"`
	State        string      `db:"state"`
	ScheduledAt  time.Time   `db:"scheduled_at"`
	Tags         []string    `db:"tags"`
	UniqueKey    []byte      `db:"unique_key"`
	UniqueStates pgtype.Bits `db:"unique_states"`
	// MoreDue, the same on every row of a pass, says that a tenant may
	// have had more due jobs than the pass read of it.
	MoreDue bool `db:"more_due"`
}

// fairFetchSQL locks up to $4 available jobs of queue $1 fairly across
// tenants and moves them to running as River's JobGetAvailable does
// (attempt + 1, attempted_at, attempted_by trimmed to $7 entries), returning
// them in the order they were chosen. %[1]s is the schema prefix.
//
// Fair is a fair share of the queue's workers, fleet-wide: each job a tenant
// could start is given the slot (its tenant's running jobs in the queue) +
// (its rank among the tenant's available jobs, in River's order: priority,
// scheduled_at, id), and the $4 lowest slots go, ties in River's order. A
// tenant with nothing running is served before one with ten; among tenants
// with as many running, one job each per round. So a backlog delays
// another tenant's new job by about one job's run (the wait for a free
// worker), not by the backlog. Priority orders a tenant's own jobs and
// breaks ties between tenants; it does not let a tenant's jobs past
// another tenant's fair share (tenants choose their priorities).
//
// The cost is bounded by the tenants and the room, not the backlog: a loose
// index scan of river_job_fair_fetch_idx finds each tenant's first due job
// (one descent per tenant with due jobs; a tenant whose available jobs are
// all of other kinds or not yet due is read through, which River's
// producers, fetching every kind and making jobs available when due, do
// not ask for), and at most $4 tenants — those with the fewest running, then the oldest
// first job — read an even share of $4 each. Running jobs are counted on
// River's (state, queue, …) index; they are few, bounded by the workers.
// With a cap ($5 > 0), a tenant's room is also at most the cap less its
// running jobs.
const fairFetchSQL = `
WITH RECURSIVE tenants AS (
    -- One index descent per tenant, each landing on the tenant's first due
    -- job in River's order: the next tenant is the first row past the last.
    (SELECT coalesce(args->>'tenant_id', '') AS tenant, priority, scheduled_at, id
     FROM %[1]sriver_job
     WHERE state = 'available' AND queue = $1
       AND ($2::text[] IS NULL OR kind = ANY($2::text[]))
       AND scheduled_at <= coalesce($3::timestamptz, now())
     ORDER BY coalesce(args->>'tenant_id', ''), priority, scheduled_at, id
     LIMIT 1)
    UNION ALL
    SELECT n.tenant, n.priority, n.scheduled_at, n.id
    FROM tenants t
    CROSS JOIN LATERAL (
        SELECT coalesce(j.args->>'tenant_id', '') AS tenant, j.priority, j.scheduled_at, j.id
        FROM %[1]sriver_job j
        WHERE j.state = 'available' AND j.queue = $1
          AND coalesce(j.args->>'tenant_id', '') > t.tenant
          AND ($2::text[] IS NULL OR j.kind = ANY($2::text[]))
          AND j.scheduled_at <= coalesce($3::timestamptz, now())
        ORDER BY coalesce(j.args->>'tenant_id', ''), j.priority, j.scheduled_at, j.id
        LIMIT 1) n
),
running AS (
    -- Only read when the counts can change the outcome: with a cap, or
    -- with two tenants or more to order. A lone tenant's slots are its
    -- ranks shifted by one constant, in the same order, and counting its
    -- running jobs reads every one of them (their args) on every fetch:
    -- about a fifth of a fetch of 200 jobs with 2 000 running. Postgres
    -- tests the condition once, before the scan (a one-time filter).
    SELECT coalesce(args->>'tenant_id', '') AS tenant, count(*)::int AS n
    FROM %[1]sriver_job
    WHERE state = 'running' AND queue = $1
      AND ($5::int > 0 OR EXISTS (SELECT 1 FROM tenants OFFSET 1))
    GROUP BY 1
),
heads AS (
    SELECT t.tenant, coalesce(r.n, 0) AS busy,
           CASE WHEN $5::int > 0 THEN least($4::int, $5::int - coalesce(r.n, 0)) ELSE $4::int END AS room
    FROM tenants t
    LEFT JOIN running r ON r.tenant = t.tenant
    WHERE $5::int <= 0 OR coalesce(r.n, 0) < $5::int
    ORDER BY coalesce(r.n, 0), t.priority, t.scheduled_at, t.id
    LIMIT $4::int
),
shares AS (
    -- A tenant reads at most an even share of the room (plus the rounding)
    -- this pass: what keeps a fetch from reading room × tenants rows. A
    -- tenant with fewer due jobs than its share leaves room unfilled, and
    -- FairFetch runs another pass for it (more_due).
    SELECT tenant, busy, room, least(room, ($4::int + n - 1) / n) AS share
    FROM (SELECT *, count(*) OVER () AS n FROM heads) h
),
candidates AS (
    SELECT c.id, c.priority, c.scheduled_at, s.tenant, s.share, s.room,
           s.busy + row_number() OVER (PARTITION BY s.tenant ORDER BY c.priority, c.scheduled_at, c.id) AS slot
    FROM shares s
    CROSS JOIN LATERAL (
        SELECT j.id, j.priority, j.scheduled_at
        FROM %[1]sriver_job j
        WHERE j.state = 'available' AND j.queue = $1
          AND coalesce(j.args->>'tenant_id', '') = s.tenant
          AND ($2::text[] IS NULL OR j.kind = ANY($2::text[]))
          AND j.scheduled_at <= coalesce($3::timestamptz, now())
        ORDER BY j.priority, j.scheduled_at, j.id
        LIMIT s.share) c
),
more AS (
    -- Whether a tenant read its whole share with room left: it may have
    -- more due jobs than this pass could take.
    SELECT coalesce(bool_or(n = share AND share < room), false) AS due
    FROM (SELECT count(*) AS n, max(share) AS share, max(room) AS room
          FROM candidates GROUP BY tenant) g
),
chosen AS (
    SELECT id, slot, priority, scheduled_at
    FROM candidates
    ORDER BY slot, priority, scheduled_at, id
    LIMIT $4::int
),
locked AS (
    -- state is checked again on the locked row: a job another fetcher
    -- moved to running since this statement's snapshot is not taken twice.
    SELECT id FROM %[1]sriver_job
    WHERE id = ANY (ARRAY(SELECT id FROM chosen)) AND state = 'available'
    FOR UPDATE SKIP LOCKED
),
updated AS (
    UPDATE %[1]sriver_job SET
        state = 'running',
        attempt = river_job.attempt + 1,
        attempted_at = coalesce($3::timestamptz, now()),
        attempted_by = array_append(
            CASE WHEN array_length(river_job.attempted_by, 1) >= $7::int
            -- +2, not +1: Postgres arrays start at 1.
            THEN river_job.attempted_by[array_length(river_job.attempted_by, 1) + 2 - $7::int:]
            ELSE river_job.attempted_by
            END,
            $6::text)
    FROM locked
    WHERE river_job.id = locked.id
    RETURNING river_job.id, river_job.args, river_job.attempt, river_job.attempted_at,
        river_job.attempted_by, river_job.created_at, river_job.errors, river_job.finalized_at,
        river_job.kind, river_job.max_attempts, river_job.metadata, river_job.priority,
        river_job.queue, river_job.state::text AS state, river_job.scheduled_at, river_job.tags,
        river_job.unique_key, river_job.unique_states
)
SELECT u.*, (SELECT due FROM more) AS more_due
FROM updated u JOIN chosen c ON c.id = u.id
ORDER BY c.slot, c.priority, c.scheduled_at, c.id`

// FairFetch moves up to p.Max available jobs of p.Queue to running, a fair
// share to each tenant with work, never past p.TenantCap running jobs of one
// tenant (fairFetchSQL says how). Fetches of one queue — every process's —
// take turns on the queue's advisory lock: each counts the running jobs the
// previous one committed, and two never choose the same jobs (one would
// then skip them all and fetch nothing). The lock and the fetch go in one
// round trip, a batch, which Postgres runs as one implicit transaction
// (the lock is held until the batch ends) with a snapshot per statement
// (the fetch sees what the lock waited for).
//
// A pass reads an even share of each tenant; when a tenant had fewer due
// jobs than its share, another pass fills the room left, counting the jobs
// the previous passes moved to running. Few passes are ever needed: each
// one fills the room or exhausts a tenant.
func (q *Queries) FairFetch(ctx context.Context, p FairFetchParams) ([]FetchedRiverJob, error) {
	batcher, ok := q.db.(interface {
		SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
	})
	if !ok {
		return nil, fmt.Errorf("error fetching from queue %s: %T cannot send a batch", p.Queue, q.db)
	}
	prefix := ""
	if p.Schema != "" {
		prefix = pgx.Identifier{p.Schema}.Sanitize() + "."
	}
	var out []FetchedRiverJob
	for pass := 0; pass < maxFairFetchPasses && len(out) < p.Max; pass++ {
		rows, err := fairFetchPass(ctx, batcher, p, prefix, p.Max-len(out))
		if err != nil {
			if len(out) > 0 {
				// The earlier passes' jobs are committed as running: they
				// are returned to be worked, and the next fetch retries.
				return out, nil
			}
			return nil, err
		}
		out = append(out, rows...)
		if len(rows) == 0 || !rows[0].MoreDue {
			break
		}
	}
	return out, nil
}

// fairFetchPass is one pass of FairFetch for up to room jobs.
func fairFetchPass(ctx context.Context, db interface {
	SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
}, p FairFetchParams, prefix string, room int) ([]FetchedRiverJob, error) {
	batch := &pgx.Batch{}
	batch.Queue(`SELECT pg_advisory_xact_lock($1::int4, hashtext(coalesce(nullif($2, ''), current_schema()) || '/' || $3))`,
		int32(fairFetchLock), p.Schema, p.Queue)
	batch.Queue(fmt.Sprintf(fairFetchSQL, prefix),
		p.Queue, p.Kinds, p.Now, room, p.TenantCap, p.ClientID, p.MaxAttemptedBy)
	br := db.SendBatch(ctx, batch)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, fmt.Errorf("error taking the fetch lock of queue %s: %w", p.Queue, err)
	}
	rows, _ := br.Query() // a query error surfaces from the collect
	// Scanned by position, in fairFetchSQL's column order: the fetch
	// returns up to MaxWorkers rows at a time, and pgx's RowToStructByName
	// (reflection, a name lookup per column) cost about 2.4 µs a job in the
	// burn-down's profile.
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (FetchedRiverJob, error) {
		var j FetchedRiverJob
		err := row.Scan(&j.ID, &j.Args, &j.Attempt, &j.AttemptedAt, &j.AttemptedBy, &j.CreatedAt,
			&j.Errors, &j.FinalizedAt, &j.Kind, &j.MaxAttempts, &j.Metadata, &j.Priority, &j.Queue,
			&j.State, &j.ScheduledAt, &j.Tags, &j.UniqueKey, &j.UniqueStates, &j.MoreDue)
		return j, err
	})
	if err != nil {
		return nil, fmt.Errorf("error fetching jobs from queue %s: %w", p.Queue, err)
	}
	// The batch's implicit transaction commits as it ends: the jobs are
	// running only once Close returns without error.
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("error fetching jobs from queue %s: %w", p.Queue, err)
	}
	return out, nil
}

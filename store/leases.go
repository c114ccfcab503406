package store

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/bpc-platform/bpc/core/errcode"
)

// reaperLock is the advisory lock key that makes one reaper per schema act
// at a time (any number of processes run one; the others skip the tick). It
// is taken with the schema's hash as the second key: advisory locks are
// per database, and services in other schemas of it (the tests' parallel
// services, say) have jobs of their own to reap.
const reaperLock = 0x62706331 // "bpc1"

// LeaseRenewal is what a renewal found.
type LeaseRenewal int

// Outcomes of RenewLeases.
const (
	// LeaseRenewed: the lease now runs until now + ttl.
	LeaseRenewed LeaseRenewal = iota
	// LeaseBusy: a transaction holds the job's row — the job's own handler
	// committing, most likely; nothing was changed, try again next period.
	LeaseBusy
	// LeaseFinished: this attempt ended (its completion is committed).
	LeaseFinished
	// LeaseLost: the attempt no longer holds the lease — reaped (the job
	// may run elsewhere now), cancelled, or expired before the renewal.
	LeaseLost
)

// LeaseHold names a running attempt whose lease a worker renews.
type LeaseHold struct {
	RiverJobID int64
	Attempt    int
}

// RenewLeases extends the leases of this worker's running attempts to now +
// ttl in one statement and reports, per River job id, what it found. It
// never waits for a lock: a row locked by a transaction in flight (the
// handler committing its completion) is LeaseBusy, not lost.
//
// A row it locks is judged by its locked version, the newest: a completion
// committed after the statement's snapshot but before the lock is
// LeaseFinished. Judged by the snapshot's version (RUNNING, not renewed by
// the update, which does see the completion) it was LeaseLost, and the
// attempt that had just committed its work was cancelled and logged as
// LEASE_EXPIRED (seen in a chaos run: two jobs "lost" 108 ms into a 4 s
// lease, as their handlers committed).
func (q *Queries) RenewLeases(ctx context.Context, holds []LeaseHold, owner string, ttl time.Duration) (map[int64]LeaseRenewal, error) {
	out := make(map[int64]LeaseRenewal, len(holds))
	if len(holds) == 0 {
		return out, nil
	}
	ids := make([]int64, len(holds))
	attempts := make([]int32, len(holds))
	for i, h := range holds {
		ids[i], attempts[i] = h.RiverJobID, int32(h.Attempt)
	}
	rows, _ := q.db.Query(ctx, `WITH input AS (
			SELECT * FROM unnest($1::bigint[], $2::int[]) AS u(rid, attempt)),
		target AS (
			SELECT j.river_job_id, j.status, j.attempts FROM jobs_live_state j JOIN input i ON j.river_job_id = i.rid
			FOR UPDATE OF j SKIP LOCKED),
		renewed AS (
			UPDATE jobs_live_state j SET lease_expires_at = clock_timestamp() + make_interval(secs => $4)
			FROM target t, input i
			WHERE j.river_job_id = t.river_job_id AND i.rid = j.river_job_id AND j.status = 'RUNNING'
			  AND j.attempts = i.attempt AND j.lease_owner = $3 AND j.lease_expires_at > clock_timestamp()
			RETURNING j.river_job_id)
		SELECT i.rid, i.attempt, t.river_job_id IS NOT NULL, coalesce(t.status, j.status, ''), coalesce(t.attempts, j.attempts, 0),
			EXISTS (SELECT 1 FROM renewed r WHERE r.river_job_id = i.rid)
		FROM input i
		LEFT JOIN target t ON t.river_job_id = i.rid
		LEFT JOIN jobs_live_state j ON j.river_job_id = i.rid`,
		ids, attempts, owner, ttl.Seconds())
	defer rows.Close()
	for rows.Next() {
		var rid int64
		var attempt, current int32
		var unlocked, live bool
		var status string
		if err := rows.Scan(&rid, &attempt, &unlocked, &status, &current, &live); err != nil {
			return nil, fmt.Errorf("error renewing leases: %w", err)
		}
		switch {
		case live:
			out[rid] = LeaseRenewed
		case !unlocked && status != "":
			out[rid] = LeaseBusy
		case current == attempt && status != "RUNNING" && status != "QUEUED" && status != "":
			out[rid] = LeaseFinished
		default:
			out[rid] = LeaseLost
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error renewing leases: %w", err)
	}
	return out, nil
}

// FenceLease is the check a handler makes in its transaction just before it
// commits: the River job is still running this attempt and its lease has
// not expired. It locks the River job row until the transaction ends, so the
// reaper (which skips locked rows) cannot take the job back between this
// check and the commit. A lost lease is LEASE_EXPIRED: the transaction must
// roll back, and its effects are left to the attempt that holds the lease.
func (q *Queries) FenceLease(ctx context.Context, riverJobID int64, attempt int) error {
	return q.FenceLeaseMirrored(ctx, riverJobID, attempt, nil)
}

// FenceLeaseMirrored is FenceLease that also checks, in the same round
// trip, that the mirror wrote the SSOT row of each job the transaction
// inserted without reading its row back (passport.Tx.Unread): a River job
// without one is the missing mirror trigger's INTERNAL error.
func (q *Queries) FenceLeaseMirrored(ctx context.Context, riverJobID int64, attempt int, inserted []uuid.UUID) error {
	// One round trip: it is paid by every job, in the transaction that
	// completes it.
	var state string
	var current int
	var mirrored, live bool
	var missing pgtype.UUID
	err := q.db.QueryRow(ctx, `SELECT r.state::text, r.attempt, j.river_job_id IS NOT NULL,
			coalesce(j.lease_expires_at > clock_timestamp(), false),
			`+fmt.Sprintf(firstUnmirroredSQL, 2)+`
		FROM river_job r LEFT JOIN jobs_live_state j ON j.river_job_id = r.id
		WHERE r.id = $1 FOR UPDATE OF r`, riverJobID, uuidArray(inserted)).Scan(&state, &current, &mirrored, &live, &missing)
	if err != nil {
		return notFound(err, "River job", riverJobID)
	}
	if state != "running" || current != attempt {
		return errcode.New(errcode.LeaseExpired, "attempt %d of River job %d lost its lease (the job is %s, attempt %d)", attempt, riverJobID, state, current)
	}
	if !mirrored {
		return notFound(pgx.ErrNoRows, "SSOT job of River job", riverJobID)
	}
	if !live {
		return errcode.New(errcode.LeaseExpired, "the lease of attempt %d of River job %d expired", attempt, riverJobID)
	}
	if missing.Valid {
		return MissingSSOTRow(missing.Bytes) // the first inserted id without its row
	}
	return nil
}

// ReapedJob is a running job whose lease expired and that the reaper
// returned to River.
type ReapedJob struct {
	RiverJobID int64
	Kind       string
	// State is River's new state: available (retried at once) or discarded
	// (DEAD_LETTER: its attempts were exhausted, or it lost its worker
	// maxLosses times in a row).
	State   string
	Attempt int
	// LeaseLosses is how many attempts in a row, this one included, ended
	// with an expired lease.
	LeaseLosses int
	// Poison is true when the job was discarded for its lease losses.
	Poison    bool
	Owner     string
	ExpiredAt time.Time
}

// ReapExpiredLeases returns running jobs whose SSOT lease expired to River,
// at most limit per call: available for another attempt, or discarded
// (DEAD_LETTER) when the expired attempt was the last, or when it is the
// job's maxLosses-th attempt in a row to end with an expired lease. A
// LEASE_EXPIRED error is appended to River's errors in the form workers store
// theirs (errcode.Encode's JSON), so last_error.code is LEASE_EXPIRED (for a
// job discarded for its losses the message reads "worker lost N times in a
// row …"), through the same mirror as every River change. Only one process reaps at a time (an advisory lock; the others
// return nothing), and rows a fencing handler holds are skipped until its
// transaction ends.
//
// Why a limit on losses: a job that crashes its worker process (a handler
// bug no recover catches) would otherwise be handed to the next worker by
// every reap, and take each of them down with every other job it was
// running, until its attempts ran out. "In a row" is read from River's
// errors, which keep one entry per failed attempt: the trailing entries
// whose code is LEASE_EXPIRED (read by the mirror's own decoder,
// bpc_last_error), counted by attempt. Any other error in
// between breaks the run (a snooze appends none: it neither counts nor
// breaks); an operator's retry does not, so a retried poison job is
// discarded at its next loss. maxLosses below 1 sets no limit.
func (q *Queries) ReapExpiredLeases(ctx context.Context, limit, maxLosses int) ([]ReapedJob, error) {
	if maxLosses < 1 {
		maxLosses = math.MaxInt32
	}
	var out []ReapedJob
	err := q.InTx(ctx, func(tx pgx.Tx) error {
		var locked bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1::int4, hashtext(current_schema()))`, int32(reaperLock)).Scan(&locked); err != nil {
			return fmt.Errorf("error taking the reaper lock: %w", err)
		}
		if !locked {
			return nil
		}
		rows, _ := tx.Query(ctx, `WITH expired AS (
				SELECT r.id, r.attempt, r.max_attempts, r.errors, j.lease_owner, j.lease_expires_at
				FROM river_job r JOIN jobs_live_state j ON j.river_job_id = r.id
				WHERE r.state = 'running' AND j.status = 'RUNNING' AND j.attempts = r.attempt
				  AND j.lease_expires_at < clock_timestamp()
				ORDER BY r.id
				LIMIT $1
				FOR UPDATE OF r SKIP LOCKED),
			counted AS (
				SELECT e.*, (
					SELECT count(DISTINCT lost.attempt) FROM (
						SELECT (x.e->>'attempt')::int AS attempt
						FROM unnest(e.errors) WITH ORDINALITY AS x(e, i)
						WHERE x.i > coalesce((
							SELECT max(y.i) FROM unnest(e.errors) WITH ORDINALITY AS y(e, i)
							WHERE bpc_last_error(y.e)->>'code' IS DISTINCT FROM 'LEASE_EXPIRED'), 0)
						UNION ALL SELECT e.attempt) AS lost) AS losses
				FROM expired e),
			decided AS (
				SELECT c.*, c.losses >= $2 AS poison, c.losses >= $2 OR c.attempt >= c.max_attempts AS discard
				FROM counted c)
			UPDATE river_job r SET
				state = CASE WHEN d.discard THEN 'discarded' ELSE 'available' END::river_job_state,
				-- The job keeps its scheduled_at (in the past): River fetches by
				-- priority, then scheduled_at, so it runs next, not behind the
				-- backlog that queued up while it was lost.
				finalized_at = CASE WHEN d.discard THEN now() END,
				errors = array_append(r.errors, jsonb_build_object(
					'at', now(), 'attempt', r.attempt, 'trace', '',
					'error', jsonb_build_object('code', 'LEASE_EXPIRED', 'message', CASE WHEN d.poison
						THEN format('worker lost %s times in a row (the lease of %s expired at %s without renewal); discarded so that it cannot take more workers down',
							d.losses, coalesce(d.lease_owner, 'the worker'), d.lease_expires_at)
						ELSE format('the lease of %s expired at %s without renewal (worker crashed, paused or partitioned)',
							coalesce(d.lease_owner, 'the worker'), d.lease_expires_at) END)::text))
			FROM decided d WHERE r.id = d.id
			RETURNING r.id, r.kind, r.state::text, r.attempt, d.losses, d.poison, coalesce(d.lease_owner, ''), d.lease_expires_at`,
			limit, maxLosses)
		var err error
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ReapedJob, error) {
			var j ReapedJob
			err := row.Scan(&j.RiverJobID, &j.Kind, &j.State, &j.Attempt, &j.LeaseLosses, &j.Poison, &j.Owner, &j.ExpiredAt)
			return j, err
		})
		if err != nil {
			return fmt.Errorf("error reaping expired leases: %w", err)
		}
		return nil
	})
	return out, err
}

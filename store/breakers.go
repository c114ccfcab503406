package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
)

// breakerRow is the table's row as scanned.
type breakerRow struct {
	WebhookEndpointID uuid.UUID  `db:"webhook_endpoint_id"`
	TenantID          uuid.UUID  `db:"tenant_id"`
	State             string     `db:"state"`
	BucketMS          int32      `db:"bucket_ms"`
	BucketIDs         []int64    `db:"bucket_ids"`
	BucketAttempts    []int32    `db:"bucket_attempts"`
	BucketFailures    []int32    `db:"bucket_failures"`
	Attempts          int32      `db:"attempts"`
	Failures          int32      `db:"failures"`
	OpenedAt          *time.Time `db:"opened_at"`
	NextProbeAt       *time.Time `db:"next_probe_at"`
	ProbeDeliveryID   *uuid.UUID `db:"probe_delivery_id"`
	UpdatedAt         time.Time  `db:"updated_at"`
}

func (r breakerRow) breaker() bpctype.WebhookBreaker {
	return bpctype.WebhookBreaker{
		WebhookEndpointID: r.WebhookEndpointID, TenantID: r.TenantID, State: r.State,
		Window: bpctype.BreakerWindow{
			BucketWidth: time.Duration(r.BucketMS) * time.Millisecond,
			Buckets:     r.BucketIDs, Attempts: r.BucketAttempts, Failures: r.BucketFailures,
		},
		Attempts: r.Attempts, Failures: r.Failures, OpenedAt: r.OpenedAt, NextProbeAt: r.NextProbeAt,
		ProbeDeliveryID: r.ProbeDeliveryID, UpdatedAt: r.UpdatedAt, Stored: true,
	}
}

const breakerColumns = `webhook_endpoint_id, tenant_id, state, bucket_ms, bucket_ids, bucket_attempts,
	bucket_failures, attempts, failures, opened_at, next_probe_at, probe_delivery_id, updated_at`

func closedBreaker(tenantID, endpointID uuid.UUID) bpctype.WebhookBreaker {
	return bpctype.WebhookBreaker{WebhookEndpointID: endpointID, TenantID: tenantID, State: bpctype.BreakerClosed}
}

func scanBreaker(rows pgx.Rows) (bpctype.WebhookBreaker, error) {
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[breakerRow])
	if err != nil {
		return bpctype.WebhookBreaker{}, err
	}
	return r.breaker(), nil
}

// GetWebhookBreaker returns the breaker of the tenant's endpoint: CLOSED
// with an empty window when it has none yet.
func (q *Queries) GetWebhookBreaker(ctx context.Context, tenantID, endpointID uuid.UUID) (bpctype.WebhookBreaker, error) {
	rows, _ := q.db.Query(ctx, `SELECT `+breakerColumns+` FROM webhook_endpoint_breakers
		WHERE tenant_id = $1 AND webhook_endpoint_id = $2`, tenantID, endpointID)
	b, err := scanBreaker(rows)
	if errors.Is(err, pgx.ErrNoRows) {
		return closedBreaker(tenantID, endpointID), nil
	}
	if err != nil {
		return bpctype.WebhookBreaker{}, fmt.Errorf("error loading breaker of webhook endpoint %s: %w", endpointID, err)
	}
	return b, nil
}

// UpdateWebhookBreaker applies fn to the endpoint's breaker under its row
// lock, inside the caller's transaction (the one that records the delivery
// attempt), and stores the result when fn says so: one locked read and one
// single-row write per attempt. fn may run twice when a concurrent
// transaction creates the row first. It returns the breaker before and after.
func (q *Queries) UpdateWebhookBreaker(ctx context.Context, tenantID, endpointID uuid.UUID,
	fn func(bpctype.WebhookBreaker) (bpctype.WebhookBreaker, bool),
) (before, after bpctype.WebhookBreaker, err error) {
	for range 2 {
		rows, _ := q.db.Query(ctx, `SELECT `+breakerColumns+` FROM webhook_endpoint_breakers
			WHERE webhook_endpoint_id = $1 FOR UPDATE`, endpointID)
		before, err = scanBreaker(rows)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			before = closedBreaker(tenantID, endpointID)
		case err != nil:
			return before, before, fmt.Errorf("error locking breaker of webhook endpoint %s: %w", endpointID, err)
		}
		next, write := fn(before)
		if !write {
			return before, before, nil
		}
		next.WebhookEndpointID, next.TenantID = endpointID, before.TenantID
		if !before.Stored {
			next.TenantID = tenantID
		}
		stored, err := q.writeBreaker(ctx, next, before.Stored)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // created concurrently: lock it and apply fn again
		}
		if err != nil {
			return before, before, err
		}
		return before, stored, nil
	}
	return before, before, fmt.Errorf("error updating breaker of webhook endpoint %s: row kept changing", endpointID)
}

// writeBreaker updates the row, or inserts it when it did not exist (then
// pgx.ErrNoRows means another transaction inserted it first).
func (q *Queries) writeBreaker(ctx context.Context, b bpctype.WebhookBreaker, exists bool) (bpctype.WebhookBreaker, error) {
	w := b.Window
	args := []any{b.WebhookEndpointID, b.TenantID, b.State, int32(w.BucketWidth.Milliseconds()),
		w.Buckets, w.Attempts, w.Failures, b.Attempts, b.Failures, b.OpenedAt, b.NextProbeAt, b.ProbeDeliveryID}
	var rows pgx.Rows
	if exists {
		rows, _ = q.db.Query(ctx, `UPDATE webhook_endpoint_breakers SET
				tenant_id = $2, state = $3, bucket_ms = $4, bucket_ids = $5, bucket_attempts = $6, bucket_failures = $7,
				attempts = $8, failures = $9, opened_at = $10, next_probe_at = $11, probe_delivery_id = $12,
				updated_at = now()
			WHERE webhook_endpoint_id = $1
			RETURNING `+breakerColumns, args...)
	} else {
		rows, _ = q.db.Query(ctx, `INSERT INTO webhook_endpoint_breakers (webhook_endpoint_id, tenant_id, state,
				bucket_ms, bucket_ids, bucket_attempts, bucket_failures, attempts, failures, opened_at,
				next_probe_at, probe_delivery_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
			ON CONFLICT (webhook_endpoint_id) DO NOTHING
			RETURNING `+breakerColumns, args...)
	}
	stored, err := scanBreaker(rows)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		if IsForeignKeyViolation(err) {
			return bpctype.WebhookBreaker{}, errcode.New(errcode.NotFound, "webhook endpoint %s not found", b.WebhookEndpointID)
		}
		return bpctype.WebhookBreaker{}, fmt.Errorf("error storing breaker of webhook endpoint %s: %w", b.WebhookEndpointID, err)
	}
	return stored, err
}

// ClaimWebhookBreakerProbe makes deliveryID the endpoint's probe: atomically,
// only when the breaker is still in state from (OPEN, or HALF_OPEN whose
// probe claim lapsed) and its next_probe_at has passed at now — or, when
// early is set, as soon as it is OPEN (an operator's retry: no probe is in
// flight, so the probe stays single). The claim lapses at leaseUntil. It
// returns whether this delivery won, and the breaker as it is after the
// attempt (read afresh when it lost).
func (q *Queries) ClaimWebhookBreakerProbe(ctx context.Context, tenantID, endpointID uuid.UUID, from string,
	deliveryID uuid.UUID, now, leaseUntil time.Time, early bool,
) (bool, bpctype.WebhookBreaker, error) {
	rows, _ := q.db.Query(ctx, `UPDATE webhook_endpoint_breakers SET
			state = 'HALF_OPEN', probe_delivery_id = $4, next_probe_at = $6, updated_at = now()
		WHERE tenant_id = $1 AND webhook_endpoint_id = $2 AND state = $3
			AND state IN ('OPEN', 'HALF_OPEN') AND (next_probe_at <= $5 OR ($7 AND state = 'OPEN'))
		RETURNING `+breakerColumns, tenantID, endpointID, from, deliveryID, now, leaseUntil, early)
	b, err := scanBreaker(rows)
	switch {
	case err == nil:
		return true, b, nil
	case errors.Is(err, pgx.ErrNoRows):
		b, err = q.GetWebhookBreaker(ctx, tenantID, endpointID)
		return false, b, err
	default:
		return false, b, fmt.Errorf("error claiming probe of webhook endpoint %s: %w", endpointID, err)
	}
}

// WakeHeldWebhookDeliveries makes up to limit of the endpoint's held
// deliveries available at once: River jobs (of kind in queue, the
// delivery job's) of its PENDING deliveries that wait for a future time (snoozed by the breaker, or a short retry backoff).
// Called when the breaker closes, so that held deliveries need not sleep
// out their snooze. Rows locked elsewhere are skipped; the change to
// river_job is mirrored into jobs by the mirror triggers, in this
// transaction. The wake is automatic, not an operator's retry: the
// statement sets bpc.automatic_wake (for the rest of the transaction, or of
// the statement alone on a pool) before it changes any row, so that the
// trigger bpc_mark_operator_retry leaves the jobs unmarked.
func (q *Queries) WakeHeldWebhookDeliveries(ctx context.Context, endpointID uuid.UUID, queue, kind string, now time.Time, limit int) (int64, error) {
	tag, err := q.db.Exec(ctx, `WITH automatic AS MATERIALIZED (
			SELECT set_config('bpc.automatic_wake', 'on', true) AS flag),
		held AS (
			SELECT r.id FROM river_job r
			JOIN webhook_deliveries d ON d.webhook_delivery_id = (r.args->>'webhook_delivery_id')::uuid
			WHERE (SELECT flag FROM automatic) = 'on'
				AND r.state IN ('scheduled', 'available') AND r.queue = $2 AND r.kind = $3
				AND r.scheduled_at > $4 AND d.webhook_endpoint_id = $1 AND d.status = 'PENDING'
			ORDER BY r.scheduled_at, r.id
			LIMIT $5
			FOR UPDATE OF r SKIP LOCKED)
		UPDATE river_job r SET state = 'available', scheduled_at = $4
		FROM held WHERE r.id = held.id`,
		endpointID, queue, kind, now, limit)
	if err != nil {
		return 0, fmt.Errorf("error waking held deliveries of webhook endpoint %s: %w", endpointID, err)
	}
	return tag.RowsAffected(), nil
}

// CountWebhookBreakers returns how many endpoints' breakers are in each
// state other than CLOSED, cluster-wide.
func (q *Queries) CountWebhookBreakers(ctx context.Context) (map[string]int64, error) {
	rows, _ := q.db.Query(ctx, `SELECT state, count(*) FROM webhook_endpoint_breakers
		WHERE state <> 'CLOSED' GROUP BY state`)
	out := map[string]int64{bpctype.BreakerOpen: 0, bpctype.BreakerHalfOpen: 0}
	var state string
	var n int64
	_, err := pgx.ForEachRow(rows, []any{&state, &n}, func() error {
		out[state] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("error counting webhook breakers: %w", err)
	}
	return out, nil
}

package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/rules"
)

const snapshotColumns = `s.snapshot_id, s.tenant_id, s.status, s.snapshot_hash,
	(SELECT count(*) FROM snapshot_items i WHERE i.snapshot_id = s.snapshot_id) AS item_count,
	s.created_at, s.ready_at, s.sealed_at`

// CreateSnapshot creates an empty BUILDING snapshot.
func (q *Queries) CreateSnapshot(ctx context.Context, tenantID uuid.UUID) (bpctype.Snapshot, error) {
	return create[bpctype.Snapshot](ctx, q.db, "snapshot", "tenant", tenantID, `INSERT INTO data_snapshots AS s
		(snapshot_id, tenant_id) VALUES ($1, $2)
		RETURNING `+snapshotColumns, uuid.New(), tenantID)
}

// GetSnapshot returns the tenant's snapshot.
func (q *Queries) GetSnapshot(ctx context.Context, tenantID, id uuid.UUID) (bpctype.Snapshot, error) {
	return q.snapshot(ctx, tenantID, id, "")
}

// LockSnapshot returns the snapshot locked FOR UPDATE.
func (q *Queries) LockSnapshot(ctx context.Context, tenantID, id uuid.UUID) (bpctype.Snapshot, error) {
	return q.snapshot(ctx, tenantID, id, " FOR UPDATE OF s")
}

func (q *Queries) snapshot(ctx context.Context, tenantID, id uuid.UUID, lock string) (bpctype.Snapshot, error) {
	return getOne[bpctype.Snapshot](ctx, q.db, "snapshot", id, getSnapshotSQL+lock, tenantID, id)
}

const getSnapshotSQL = `SELECT ` + snapshotColumns + ` FROM data_snapshots s
	WHERE s.tenant_id = $1 AND s.snapshot_id = $2`

// MissingFact returns the first of factIDs that is not a fact of the
// tenant, if any.
func (q *Queries) MissingFact(ctx context.Context, tenantID uuid.UUID, factIDs []uuid.UUID) (uuid.UUID, bool, error) {
	missing, err := collect(ctx, q.db, "missing facts", pgx.RowTo[uuid.UUID], `SELECT u.id FROM unnest($2::uuid[]) AS u(id)
		WHERE NOT EXISTS (SELECT 1 FROM facts f WHERE f.tenant_id = $1 AND f.fact_id = u.id)`, tenantID, factIDs)
	if err != nil || len(missing) == 0 {
		return uuid.Nil, false, err
	}
	return missing[0], true, nil
}

// SnapshotKeyClash returns the first (fact type, fact key), in order, that
// two facts would share were factIDs added to the snapshot, if any.
func (q *Queries) SnapshotKeyClash(ctx context.Context, tenantID, snapshotID uuid.UUID, factIDs []uuid.UUID) (factType, factKey string, found bool, err error) {
	err = q.db.QueryRow(ctx, `WITH wanted AS (
			SELECT f.fact_id, f.fact_type, f.fact_key FROM facts f WHERE f.tenant_id = $1 AND f.fact_id = ANY($3)
			UNION
			SELECT i.fact_id, i.fact_type, i.fact_key FROM snapshot_items i WHERE i.snapshot_id = $2)
		SELECT fact_type, fact_key FROM wanted GROUP BY fact_type, fact_key HAVING count(*) > 1
		ORDER BY fact_type, fact_key LIMIT 1`, tenantID, snapshotID, factIDs).Scan(&factType, &factKey)
	switch {
	case err == nil:
		return factType, factKey, true, nil
	case errors.Is(err, pgx.ErrNoRows):
		return "", "", false, nil
	}
	return "", "", false, fmt.Errorf("error checking snapshot items: %w", err)
}

// InsertSnapshotItems adds the tenant's facts factIDs to the snapshot and
// returns how many were new to it; one already in it is skipped.
func (q *Queries) InsertSnapshotItems(ctx context.Context, tenantID, snapshotID uuid.UUID, factIDs []uuid.UUID) (int, error) {
	tag, err := q.db.Exec(ctx, `INSERT INTO snapshot_items (tenant_id, snapshot_id, fact_id, fact_type, fact_key, payload_hash)
		SELECT f.tenant_id, $2, f.fact_id, f.fact_type, f.fact_key, f.payload_hash
		FROM facts f WHERE f.tenant_id = $1 AND f.fact_id = ANY($3)
		ON CONFLICT (snapshot_id, fact_id) DO NOTHING`, tenantID, snapshotID, factIDs)
	if err != nil {
		return 0, fmt.Errorf("error adding snapshot items: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// ListSnapshotItems returns a snapshot's items by type and key.
func (q *Queries) ListSnapshotItems(ctx context.Context, tenantID, snapshotID uuid.UUID) ([]bpctype.SnapshotItem, error) {
	return list[bpctype.SnapshotItem](ctx, q.db, "snapshot items",
		`SELECT fact_id, fact_type, fact_key, payload_hash FROM snapshot_items
		WHERE tenant_id = $1 AND snapshot_id = $2 ORDER BY fact_type, fact_key`, tenantID, snapshotID)
}

// ErrStale is returned by a guarded write whose row is no longer in the
// state the caller decided on (the caller should have locked it).
var ErrStale = errors.New("store: the row is not in the state the write requires")

// SetSnapshotReady writes a BUILDING snapshot as READY; a snapshot in
// another state is ErrStale.
func (q *Queries) SetSnapshotReady(ctx context.Context, tenantID, snapshotID uuid.UUID) (bpctype.Snapshot, error) {
	return q.setSnapshotStatus(ctx, tenantID, snapshotID, `UPDATE data_snapshots SET status = 'READY', ready_at = now()
		WHERE tenant_id = $1 AND snapshot_id = $2 AND status = 'BUILDING'`, "marking snapshot %s ready")
}

// SetSnapshotSealed writes a READY snapshot as SEALED with its hash; a
// snapshot in another state is ErrStale.
func (q *Queries) SetSnapshotSealed(ctx context.Context, tenantID, snapshotID uuid.UUID, snapshotHash string) (bpctype.Snapshot, error) {
	return q.setSnapshotStatus(ctx, tenantID, snapshotID, `UPDATE data_snapshots SET status = 'SEALED', snapshot_hash = $3, sealed_at = now()
		WHERE tenant_id = $1 AND snapshot_id = $2 AND status = 'READY'`, "sealing snapshot %s", snapshotHash)
}

func (q *Queries) setSnapshotStatus(ctx context.Context, tenantID, snapshotID uuid.UUID, sql, doing string, args ...any) (bpctype.Snapshot, error) {
	tag, err := q.db.Exec(ctx, sql, append([]any{tenantID, snapshotID}, args...)...)
	switch {
	case err != nil:
		return bpctype.Snapshot{}, fmt.Errorf("error "+doing+": %w", snapshotID, err)
	case tag.RowsAffected() == 0:
		return bpctype.Snapshot{}, fmt.Errorf("error "+doing+": %w", snapshotID, ErrStale)
	}
	return q.GetSnapshot(ctx, tenantID, snapshotID)
}

// SnapshotFacts returns the facts of a snapshot with their canonical
// payloads, as the compiler takes them.
func (q *Queries) SnapshotFacts(ctx context.Context, tenantID, snapshotID uuid.UUID) ([]rules.Fact, error) {
	return collect(ctx, q.db, "the facts of snapshot "+snapshotID.String(), scanFact, snapshotFactsSQL, tenantID, snapshotID)
}

const snapshotFactsSQL = `SELECT f.fact_type, f.fact_key, f.payload_canonical
	FROM snapshot_items i JOIN facts f ON f.tenant_id = i.tenant_id AND f.fact_id = i.fact_id
	WHERE i.tenant_id = $1 AND i.snapshot_id = $2 ORDER BY f.fact_type, f.fact_key`

func scanFact(row pgx.CollectableRow) (rules.Fact, error) {
	var f rules.Fact
	err := row.Scan(&f.FactType, &f.FactKey, &f.Payload)
	return f, err
}

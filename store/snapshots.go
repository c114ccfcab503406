package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/rules"
	"github.com/bpc-platform/bpc/core/snapshot"
)

// Snapshot statuses.
const (
	SnapshotBuilding = "BUILDING"
	SnapshotReady    = "READY"
	SnapshotSealed   = "SEALED"
)

// Snapshot is a data snapshot: a set of facts that is built, then sealed
// (BPC-SNAPSHOT-1) and compiled.
type Snapshot struct {
	SnapshotID   uuid.UUID  `db:"snapshot_id" json:"snapshot_id"`
	TenantID     uuid.UUID  `db:"tenant_id" json:"tenant_id"`
	Status       string     `db:"status" json:"status"`
	SnapshotHash *string    `db:"snapshot_hash" json:"snapshot_hash"`
	ItemCount    int64      `db:"item_count" json:"item_count"`
	CreatedAt    time.Time  `db:"created_at" json:"created_at"`
	ReadyAt      *time.Time `db:"ready_at" json:"ready_at"`
	SealedAt     *time.Time `db:"sealed_at" json:"sealed_at"`
}

// SnapshotItem is one fact of a snapshot.
type SnapshotItem struct {
	FactID      uuid.UUID `db:"fact_id" json:"fact_id"`
	FactType    string    `db:"fact_type" json:"fact_type"`
	FactKey     string    `db:"fact_key" json:"fact_key"`
	PayloadHash string    `db:"payload_hash" json:"payload_hash"`
}

const snapshotColumns = `s.snapshot_id, s.tenant_id, s.status, s.snapshot_hash,
	(SELECT count(*) FROM snapshot_items i WHERE i.snapshot_id = s.snapshot_id) AS item_count,
	s.created_at, s.ready_at, s.sealed_at`

// CreateSnapshot creates an empty BUILDING snapshot.
func (q *Queries) CreateSnapshot(ctx context.Context, tenantID uuid.UUID) (Snapshot, error) {
	return create[Snapshot](ctx, q.db, "snapshot", "tenant", tenantID, `INSERT INTO data_snapshots AS s
		(snapshot_id, tenant_id) VALUES ($1, $2)
		RETURNING `+snapshotColumns, uuid.New(), tenantID)
}

// GetSnapshot returns the tenant's snapshot.
func (q *Queries) GetSnapshot(ctx context.Context, tenantID, id uuid.UUID) (Snapshot, error) {
	return q.snapshot(ctx, tenantID, id, "")
}

// LockSnapshot returns the snapshot locked FOR UPDATE.
func (q *Queries) LockSnapshot(ctx context.Context, tenantID, id uuid.UUID) (Snapshot, error) {
	return q.snapshot(ctx, tenantID, id, " FOR UPDATE OF s")
}

func (q *Queries) snapshot(ctx context.Context, tenantID, id uuid.UUID, lock string) (Snapshot, error) {
	return getOne[Snapshot](ctx, q.db, "snapshot", id,
		`SELECT `+snapshotColumns+` FROM data_snapshots s
		WHERE s.tenant_id = $1 AND s.snapshot_id = $2`+lock, tenantID, id)
}

// AddSnapshotItems adds facts to a BUILDING snapshot and returns how many
// were new. A fact already in the snapshot is skipped; a second fact with
// the same (type, key) as one already in it is a VALIDATION_ERROR (the
// compiler reads one fact per type and key).
func (q *Queries) AddSnapshotItems(ctx context.Context, tenantID, snapshotID uuid.UUID, factIDs []uuid.UUID) (int, error) {
	sn, err := q.LockSnapshot(ctx, tenantID, snapshotID)
	if err != nil {
		return 0, err
	}
	if err := requireBuilding(sn); err != nil {
		return 0, err
	}
	if len(factIDs) == 0 {
		return 0, nil
	}
	missing, err := collect(ctx, q.db, "missing facts", pgx.RowTo[uuid.UUID], `SELECT u.id FROM unnest($2::uuid[]) AS u(id)
		WHERE NOT EXISTS (SELECT 1 FROM facts f WHERE f.tenant_id = $1 AND f.fact_id = u.id)`, tenantID, factIDs)
	if err != nil {
		return 0, err
	}
	if len(missing) > 0 {
		return 0, errcode.New(errcode.NotFound, "fact %s not found", missing[0])
	}
	var conflict struct{ typ, key string }
	err = q.db.QueryRow(ctx, `WITH wanted AS (
			SELECT f.fact_id, f.fact_type, f.fact_key FROM facts f WHERE f.tenant_id = $1 AND f.fact_id = ANY($3)
			UNION
			SELECT i.fact_id, i.fact_type, i.fact_key FROM snapshot_items i WHERE i.snapshot_id = $2)
		SELECT fact_type, fact_key FROM wanted GROUP BY fact_type, fact_key HAVING count(*) > 1
		ORDER BY fact_type, fact_key LIMIT 1`, tenantID, snapshotID, factIDs).Scan(&conflict.typ, &conflict.key)
	switch {
	case err == nil:
		return 0, errcode.Invalid("fact_ids", "the snapshot would hold two facts (%s, %s); a snapshot holds one fact per type and key", conflict.typ, conflict.key)
	case err != pgx.ErrNoRows:
		return 0, fmt.Errorf("error checking snapshot items: %w", err)
	}
	tag, err := q.db.Exec(ctx, `INSERT INTO snapshot_items (tenant_id, snapshot_id, fact_id, fact_type, fact_key, payload_hash)
		SELECT f.tenant_id, $2, f.fact_id, f.fact_type, f.fact_key, f.payload_hash
		FROM facts f WHERE f.tenant_id = $1 AND f.fact_id = ANY($3)
		ON CONFLICT (snapshot_id, fact_id) DO NOTHING`, tenantID, snapshotID, factIDs)
	if err != nil {
		return 0, fmt.Errorf("error adding snapshot items: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

func requireBuilding(sn Snapshot) error {
	switch sn.Status {
	case SnapshotBuilding:
		return nil
	case SnapshotSealed:
		return errcode.New(errcode.SnapshotSealed, "snapshot %s is sealed", sn.SnapshotID)
	}
	return errcode.New(errcode.InvalidState, "snapshot %s is %s; items can only be added while BUILDING", sn.SnapshotID, sn.Status)
}

// ListSnapshotItems returns a snapshot's items by type and key.
func (q *Queries) ListSnapshotItems(ctx context.Context, tenantID, snapshotID uuid.UUID) ([]SnapshotItem, error) {
	return list[SnapshotItem](ctx, q.db, "snapshot items",
		`SELECT fact_id, fact_type, fact_key, payload_hash FROM snapshot_items
		WHERE tenant_id = $1 AND snapshot_id = $2 ORDER BY fact_type, fact_key`, tenantID, snapshotID)
}

// MarkSnapshotReady moves a BUILDING snapshot to READY (an empty snapshot is
// valid). Any other state is INVALID_STATE.
func (q *Queries) MarkSnapshotReady(ctx context.Context, tenantID, snapshotID uuid.UUID) (Snapshot, error) {
	sn, err := q.LockSnapshot(ctx, tenantID, snapshotID)
	if err != nil {
		return Snapshot{}, err
	}
	if sn.Status != SnapshotBuilding {
		return Snapshot{}, errcode.New(errcode.InvalidState, "snapshot %s is %s, not BUILDING", snapshotID, sn.Status)
	}
	if _, err := q.db.Exec(ctx, `UPDATE data_snapshots SET status = 'READY', ready_at = now()
		WHERE tenant_id = $1 AND snapshot_id = $2`, tenantID, snapshotID); err != nil {
		return Snapshot{}, fmt.Errorf("error marking snapshot %s ready: %w", snapshotID, err)
	}
	return q.GetSnapshot(ctx, tenantID, snapshotID)
}

// SealSnapshot seals a READY snapshot: its BPC-SNAPSHOT-1 hash over the
// items is stored and it becomes SEALED. BUILDING is SNAPSHOT_NOT_READY;
// SEALED is SNAPSHOT_SEALED.
func (q *Queries) SealSnapshot(ctx context.Context, tenantID, snapshotID uuid.UUID) (Snapshot, error) {
	sn, err := q.LockSnapshot(ctx, tenantID, snapshotID)
	if err != nil {
		return Snapshot{}, err
	}
	switch sn.Status {
	case SnapshotBuilding:
		return Snapshot{}, errcode.New(errcode.SnapshotNotReady, "snapshot %s is BUILDING; build it (READY) before sealing", snapshotID)
	case SnapshotSealed:
		return Snapshot{}, errcode.New(errcode.SnapshotSealed, "snapshot %s is already sealed", snapshotID)
	}
	items, err := q.ListSnapshotItems(ctx, tenantID, snapshotID)
	if err != nil {
		return Snapshot{}, err
	}
	seal := make([]snapshot.Item, len(items))
	for i, it := range items {
		seal[i] = snapshot.Item{FactType: it.FactType, FactKey: it.FactKey, PayloadHash: it.PayloadHash}
	}
	_, digest, err := snapshot.Seal(snapshotID.String(), seal)
	if err != nil {
		return Snapshot{}, err
	}
	if _, err := q.db.Exec(ctx, `UPDATE data_snapshots SET status = 'SEALED', snapshot_hash = $3, sealed_at = now()
		WHERE tenant_id = $1 AND snapshot_id = $2`, tenantID, snapshotID, digest); err != nil {
		return Snapshot{}, fmt.Errorf("error sealing snapshot %s: %w", snapshotID, err)
	}
	return q.GetSnapshot(ctx, tenantID, snapshotID)
}

// SnapshotFacts returns the facts of a snapshot with their canonical
// payloads, as the compiler takes them.
func (q *Queries) SnapshotFacts(ctx context.Context, tenantID, snapshotID uuid.UUID) ([]rules.Fact, error) {
	return collect(ctx, q.db, "the facts of snapshot "+snapshotID.String(), func(row pgx.CollectableRow) (rules.Fact, error) {
		var f rules.Fact
		err := row.Scan(&f.FactType, &f.FactKey, &f.Payload)
		return f, err
	}, `SELECT f.fact_type, f.fact_key, f.payload_canonical
		FROM snapshot_items i JOIN facts f ON f.tenant_id = i.tenant_id AND f.fact_id = i.fact_id
		WHERE i.tenant_id = $1 AND i.snapshot_id = $2 ORDER BY f.fact_type, f.fact_key`, tenantID, snapshotID)
}

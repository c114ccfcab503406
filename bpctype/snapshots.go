package bpctype

import (
	"time"

	"github.com/google/uuid"
)

// Snapshot statuses.
const (
	SnapshotBuilding = "BUILDING"
	SnapshotReady    = "READY"
	SnapshotSealed   = "SEALED"
)

// SnapshotStatuses lists every snapshot status, in order.
var SnapshotStatuses = []string{SnapshotBuilding, SnapshotReady, SnapshotSealed}

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

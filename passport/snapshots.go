package passport

import (
	"context"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/snapshot"
	"github.com/bpc-platform/bpc/store"
)

// MaxSnapshotItemIDs bounds the ids one AddSnapshotItems call may list.
const MaxSnapshotItemIDs = 10000

// AddSnapshotItems adds facts to a BUILDING snapshot: the listed facts and
// every fact of the listed document versions (a version of another tenant
// is NOT_FOUND; one without facts yet adds none). It returns the snapshot
// and how many facts were new to it.
func AddSnapshotItems(ctx context.Context, t Tx, tenantID, snapshotID uuid.UUID, factIDs, versionIDs []uuid.UUID) (bpctype.Snapshot, int, error) {
	if len(versionIDs) > 0 {
		if err := t.Q.RequireDocumentVersions(ctx, tenantID, versionIDs); err != nil {
			return bpctype.Snapshot{}, 0, err
		}
		more, err := t.Q.FactsOfDocumentVersions(ctx, tenantID, versionIDs)
		if err != nil {
			return bpctype.Snapshot{}, 0, err
		}
		factIDs = dedup(append(factIDs, more...))
	}
	added, err := AddFactsToSnapshot(ctx, t.Q, tenantID, snapshotID, factIDs)
	if err != nil {
		return bpctype.Snapshot{}, 0, err
	}
	sn, err := t.Q.GetSnapshot(ctx, tenantID, snapshotID)
	return sn, added, err
}

func dedup(ids []uuid.UUID) []uuid.UUID {
	seen := make(map[uuid.UUID]bool, len(ids))
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// BuildSnapshot moves a BUILDING snapshot to READY (an empty one too) and
// records snapshot.ready; any other state is INVALID_STATE.
func BuildSnapshot(ctx context.Context, t Tx, tenantID, snapshotID uuid.UUID) (bpctype.Snapshot, error) {
	sn, err := MarkSnapshotReady(ctx, t.Q, tenantID, snapshotID)
	if err != nil {
		return bpctype.Snapshot{}, err
	}
	return sn, t.Event(ctx, tenantID, AggregateSnapshot, snapshotID, EventSnapshotReady, map[string]any{"item_count": sn.ItemCount})
}

// SealSnapshot seals a READY snapshot, fixing its hash, and records
// snapshot.sealed.
func SealSnapshot(ctx context.Context, t Tx, tenantID, snapshotID uuid.UUID) (bpctype.Snapshot, error) {
	sn, err := MarkSnapshotSealed(ctx, t.Q, tenantID, snapshotID)
	if err != nil {
		return bpctype.Snapshot{}, err
	}
	return sn, t.Event(ctx, tenantID, AggregateSnapshot, snapshotID, EventSnapshotSealed, map[string]any{"snapshot_hash": sn.SnapshotHash})
}

// AddFactsToSnapshot adds the tenant's facts to a BUILDING snapshot and
// returns how many were new. A fact already in the snapshot is skipped; a
// second fact with the same (type, key) as one already in it is a
// VALIDATION_ERROR (the compiler reads one fact per type and key). It
// records no event (AddSnapshotItems' caller does).
func AddFactsToSnapshot(ctx context.Context, q *store.Queries, tenantID, snapshotID uuid.UUID, factIDs []uuid.UUID) (int, error) {
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
	missing, found, err := q.MissingFact(ctx, tenantID, factIDs)
	if err != nil {
		return 0, err
	}
	if found {
		return 0, errcode.New(errcode.NotFound, "fact %s not found", missing)
	}
	typ, key, clash, err := q.SnapshotKeyClash(ctx, tenantID, snapshotID, factIDs)
	if err != nil {
		return 0, err
	}
	if clash {
		return 0, errcode.Invalid("fact_ids", "the snapshot would hold two facts (%s, %s); a snapshot holds one fact per type and key", typ, key)
	}
	return q.InsertSnapshotItems(ctx, tenantID, snapshotID, factIDs)
}

// requireBuilding is the rule of a snapshot's items: they can be added only
// while it is BUILDING.
func requireBuilding(sn bpctype.Snapshot) error {
	switch sn.Status {
	case bpctype.SnapshotBuilding:
		return nil
	case bpctype.SnapshotSealed:
		return errcode.New(errcode.SnapshotSealed, "snapshot %s is sealed", sn.SnapshotID)
	}
	return errcode.New(errcode.InvalidState, "snapshot %s is %s; items can only be added while BUILDING", sn.SnapshotID, sn.Status)
}

// MarkSnapshotReady moves a BUILDING snapshot to READY (an empty snapshot
// is valid). Any other state is INVALID_STATE. It records no event
// (BuildSnapshot does).
func MarkSnapshotReady(ctx context.Context, q *store.Queries, tenantID, snapshotID uuid.UUID) (bpctype.Snapshot, error) {
	sn, err := q.LockSnapshot(ctx, tenantID, snapshotID)
	if err != nil {
		return bpctype.Snapshot{}, err
	}
	if sn.Status != bpctype.SnapshotBuilding {
		return bpctype.Snapshot{}, errcode.New(errcode.InvalidState, "snapshot %s is %s, not BUILDING", snapshotID, sn.Status)
	}
	return q.SetSnapshotReady(ctx, tenantID, snapshotID)
}

// MarkSnapshotSealed seals a READY snapshot: its BPC-SNAPSHOT-1 hash over
// the items is stored and it becomes SEALED. BUILDING is
// SNAPSHOT_NOT_READY; SEALED is SNAPSHOT_SEALED. It records no event
// (SealSnapshot does).
func MarkSnapshotSealed(ctx context.Context, q *store.Queries, tenantID, snapshotID uuid.UUID) (bpctype.Snapshot, error) {
	sn, err := q.LockSnapshot(ctx, tenantID, snapshotID)
	if err != nil {
		return bpctype.Snapshot{}, err
	}
	switch sn.Status {
	case bpctype.SnapshotBuilding:
		return bpctype.Snapshot{}, errcode.New(errcode.SnapshotNotReady, "snapshot %s is BUILDING; build it (READY) before sealing", snapshotID)
	case bpctype.SnapshotSealed:
		return bpctype.Snapshot{}, errcode.New(errcode.SnapshotSealed, "snapshot %s is already sealed", snapshotID)
	}
	items, err := q.ListSnapshotItems(ctx, tenantID, snapshotID)
	if err != nil {
		return bpctype.Snapshot{}, err
	}
	seal := make([]snapshot.Item, len(items))
	for i, it := range items {
		seal[i] = snapshot.Item{FactType: it.FactType, FactKey: it.FactKey, PayloadHash: it.PayloadHash}
	}
	_, digest, err := snapshot.Seal(snapshotID.String(), seal)
	if err != nil {
		return bpctype.Snapshot{}, err
	}
	return q.SetSnapshotSealed(ctx, tenantID, snapshotID, digest)
}

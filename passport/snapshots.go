package passport

import (
	"context"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/store"
)

// MaxSnapshotItemIDs bounds the ids one AddSnapshotItems call may list.
const MaxSnapshotItemIDs = 10000

// AddSnapshotItems adds facts to a BUILDING snapshot: the listed facts and
// every fact of the listed document versions (a version of another tenant
// is NOT_FOUND; one without facts yet adds none). It returns the snapshot
// and how many facts were new to it.
func AddSnapshotItems(ctx context.Context, t Tx, tenantID, snapshotID uuid.UUID, factIDs, versionIDs []uuid.UUID) (store.Snapshot, int, error) {
	if len(versionIDs) > 0 {
		if err := t.Q.RequireDocumentVersions(ctx, tenantID, versionIDs); err != nil {
			return store.Snapshot{}, 0, err
		}
		more, err := t.Q.FactsOfDocumentVersions(ctx, tenantID, versionIDs)
		if err != nil {
			return store.Snapshot{}, 0, err
		}
		factIDs = dedup(append(factIDs, more...))
	}
	added, err := t.Q.AddSnapshotItems(ctx, tenantID, snapshotID, factIDs)
	if err != nil {
		return store.Snapshot{}, 0, err
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
func BuildSnapshot(ctx context.Context, t Tx, tenantID, snapshotID uuid.UUID) (store.Snapshot, error) {
	sn, err := t.Q.MarkSnapshotReady(ctx, tenantID, snapshotID)
	if err != nil {
		return store.Snapshot{}, err
	}
	return sn, t.Event(ctx, tenantID, AggregateSnapshot, snapshotID, EventSnapshotReady, map[string]any{"item_count": sn.ItemCount})
}

// SealSnapshot seals a READY snapshot, fixing its hash, and records
// snapshot.sealed.
func SealSnapshot(ctx context.Context, t Tx, tenantID, snapshotID uuid.UUID) (store.Snapshot, error) {
	sn, err := t.Q.SealSnapshot(ctx, tenantID, snapshotID)
	if err != nil {
		return store.Snapshot{}, err
	}
	return sn, t.Event(ctx, tenantID, AggregateSnapshot, snapshotID, EventSnapshotSealed, map[string]any{"snapshot_hash": sn.SnapshotHash})
}

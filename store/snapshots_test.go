package store_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/facts"
	"github.com/bpc-platform/bpc/core/snapshot"
	"github.com/bpc-platform/bpc/examples/nmc811"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

func (e env) createSnapshot(t *testing.T, tenantID uuid.UUID) bpctype.Snapshot {
	t.Helper()
	sn, err := e.Store.CreateSnapshot(e.Ctx, tenantID)
	require.NoError(t, err)
	return sn
}

func (e env) addItems(t *testing.T, tenantID, snapshotID uuid.UUID, ids []uuid.UUID) (int, error) {
	t.Helper()
	return committed(e, func(q *store.Queries) (int, error) {
		return passport.AddFactsToSnapshot(e.Ctx, q, tenantID, snapshotID, ids)
	})
}

func (e env) markReady(t *testing.T, tenantID, snapshotID uuid.UUID) (bpctype.Snapshot, error) {
	t.Helper()
	return committed(e, func(q *store.Queries) (bpctype.Snapshot, error) {
		return passport.MarkSnapshotReady(e.Ctx, q, tenantID, snapshotID)
	})
}

func (e env) seal(t *testing.T, tenantID, snapshotID uuid.UUID) (bpctype.Snapshot, error) {
	t.Helper()
	return committed(e, func(q *store.Queries) (bpctype.Snapshot, error) {
		return passport.MarkSnapshotSealed(e.Ctx, q, tenantID, snapshotID)
	})
}

// sealedSample uploads and parses the three sample documents and seals a
// snapshot of all their facts; it returns the snapshot and the facts.
func (e env) sealedSample(t *testing.T, tenantID uuid.UUID) (bpctype.Snapshot, []facts.Fact) {
	t.Helper()
	var all []facts.Fact
	var versions []uuid.UUID
	for _, name := range []string{nmc811.DocBOM, nmc811.DocPCF, nmc811.DocDueDiligence} {
		v, fs := e.uploadSample(t, tenantID, name)
		all = append(all, fs...)
		versions = append(versions, v.DocumentVersionID)
	}
	sn := e.createSnapshot(t, tenantID)
	n, err := e.addItems(t, tenantID, sn.SnapshotID, e.factIDs(t, tenantID, versions...))
	require.NoError(t, err)
	require.Equal(t, len(all), n)
	_, err = e.markReady(t, tenantID, sn.SnapshotID)
	require.NoError(t, err)
	sn, err = e.seal(t, tenantID, sn.SnapshotID)
	require.NoError(t, err)
	return sn, all
}

// sealOf computes the BPC-SNAPSHOT-1 hash of facts independently of the store.
func sealOf(t *testing.T, snapshotID uuid.UUID, fs []facts.Fact) string {
	t.Helper()
	items := make([]snapshot.Item, len(fs))
	for i, f := range fs {
		items[i] = snapshot.Item{FactType: f.FactType, FactKey: f.FactKey, PayloadHash: sha256Hex(f.Payload)}
	}
	_, digest, err := snapshot.Seal(snapshotID.String(), items)
	require.NoError(t, err)
	return digest
}

func TestSnapshotLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bom, bomFacts := e.uploadSample(t, store.DevTenantID, nmc811.DocBOM)
	pcf, pcfFacts := e.uploadSample(t, store.DevTenantID, nmc811.DocPCF)
	bomIDs := e.factIDs(t, store.DevTenantID, bom.DocumentVersionID)
	pcfIDs := e.factIDs(t, store.DevTenantID, pcf.DocumentVersionID)

	sn := e.createSnapshot(t, store.DevTenantID)
	require.Equal(t, bpctype.SnapshotBuilding, sn.Status)
	require.Equal(t, store.DevTenantID, sn.TenantID)
	require.Nil(t, sn.SnapshotHash)
	require.Zero(t, sn.ItemCount)
	require.Nil(t, sn.ReadyAt)
	require.Nil(t, sn.SealedAt)

	n, err := e.addItems(t, store.DevTenantID, sn.SnapshotID, bomIDs)
	require.NoError(t, err)
	require.Equal(t, 17, n)
	// Facts already in the snapshot are skipped, repeats in one call count once.
	n, err = e.addItems(t, store.DevTenantID, sn.SnapshotID, append(append(append([]uuid.UUID{}, bomIDs...), pcfIDs...), pcfIDs...))
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = e.addItems(t, store.DevTenantID, sn.SnapshotID, nil)
	require.NoError(t, err)
	require.Zero(t, n)
	got, err := e.Store.GetSnapshot(e.Ctx, store.DevTenantID, sn.SnapshotID)
	require.NoError(t, err)
	require.Equal(t, int64(18), got.ItemCount)

	items, err := e.Store.ListSnapshotItems(e.Ctx, store.DevTenantID, sn.SnapshotID)
	require.NoError(t, err)
	require.Len(t, items, 18)
	all := append(append([]facts.Fact{}, bomFacts...), pcfFacts...)
	hashes := map[string]string{}
	for _, f := range all {
		hashes[f.FactType+"|"+f.FactKey] = f.PayloadHash
	}
	for _, it := range items {
		require.Equal(t, hashes[it.FactType+"|"+it.FactKey], it.PayloadHash, "%s %s", it.FactType, it.FactKey)
		require.Contains(t, append(append([]uuid.UUID{}, bomIDs...), pcfIDs...), it.FactID)
	}

	// Sealing needs READY.
	_, err = e.seal(t, store.DevTenantID, sn.SnapshotID)
	requireCode(t, err, errcode.SnapshotNotReady)

	ready, err := e.markReady(t, store.DevTenantID, sn.SnapshotID)
	require.NoError(t, err)
	require.Equal(t, bpctype.SnapshotReady, ready.Status)
	require.NotNil(t, ready.ReadyAt)
	require.Nil(t, ready.SnapshotHash)
	require.Equal(t, int64(18), ready.ItemCount)
	_, err = e.markReady(t, store.DevTenantID, sn.SnapshotID)
	requireCode(t, err, errcode.InvalidState)
	_, err = e.addItems(t, store.DevTenantID, sn.SnapshotID, pcfIDs)
	requireCode(t, err, errcode.InvalidState)

	sealed, err := e.seal(t, store.DevTenantID, sn.SnapshotID)
	require.NoError(t, err)
	require.Equal(t, bpctype.SnapshotSealed, sealed.Status)
	require.NotNil(t, sealed.SealedAt)
	require.NotNil(t, sealed.SnapshotHash)
	require.Equal(t, sealOf(t, sn.SnapshotID, all), *sealed.SnapshotHash)
	require.Equal(t, int64(18), sealed.ItemCount)

	_, err = e.seal(t, store.DevTenantID, sn.SnapshotID)
	requireCode(t, err, errcode.SnapshotSealed)
	_, err = e.addItems(t, store.DevTenantID, sn.SnapshotID, bomIDs)
	requireCode(t, err, errcode.SnapshotSealed)
	_, err = e.markReady(t, store.DevTenantID, sn.SnapshotID)
	requireCode(t, err, errcode.InvalidState)

	got, err = e.Store.GetSnapshot(e.Ctx, store.DevTenantID, sn.SnapshotID)
	require.NoError(t, err)
	require.Equal(t, *sealed.SnapshotHash, *got.SnapshotHash, "the seal is stored")
	require.Equal(t, bpctype.SnapshotSealed, got.Status)
}

func TestSnapshotHoldsOneFactPerTypeAndKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v1, v2 := e.bomVersions(t)
	e.parse(t, store.DevTenantID, v1.DocumentVersionID)
	e.parse(t, store.DevTenantID, v2.DocumentVersionID)
	ids1 := e.factIDs(t, store.DevTenantID, v1.DocumentVersionID)
	ids2 := e.factIDs(t, store.DevTenantID, v2.DocumentVersionID)
	var battery1, battery2 uuid.UUID
	for _, id := range ids1 {
		if !slices.Contains(ids2, id) {
			battery1 = id
		}
	}
	for _, id := range ids2 {
		if !slices.Contains(ids1, id) {
			battery2 = id
		}
	}
	require.NotEqual(t, uuid.Nil, battery1)
	require.NotEqual(t, uuid.Nil, battery2)

	// Both battery facts in one call.
	sn := e.createSnapshot(t, store.DevTenantID)
	_, err := e.addItems(t, store.DevTenantID, sn.SnapshotID, []uuid.UUID{battery1, battery2})
	ve := requireCode(t, err, errcode.Validation)
	require.Equal(t, "fact_ids", ve.Field)
	require.Contains(t, ve.Message, "battery:EVB-NMC811-75")
	got, err := e.Store.GetSnapshot(e.Ctx, store.DevTenantID, sn.SnapshotID)
	require.NoError(t, err)
	require.Zero(t, got.ItemCount, "nothing is added")

	// The second one against one already in the snapshot.
	n, err := e.addItems(t, store.DevTenantID, sn.SnapshotID, ids1)
	require.NoError(t, err)
	require.Equal(t, 17, n)
	_, err = e.addItems(t, store.DevTenantID, sn.SnapshotID, ids2)
	requireCode(t, err, errcode.Validation)
	got, err = e.Store.GetSnapshot(e.Ctx, store.DevTenantID, sn.SnapshotID)
	require.NoError(t, err)
	require.Equal(t, int64(17), got.ItemCount, "a rejected call adds nothing, not even the facts that fit")
}

func TestSnapshotRejectsUnknownAndForeignFacts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.OtherTenant(t)
	mine, _ := e.uploadSample(t, store.DevTenantID, nmc811.DocPCF)
	theirs, _ := e.uploadSample(t, other, nmc811.DocPCF)
	myIDs := e.factIDs(t, store.DevTenantID, mine.DocumentVersionID)
	theirIDs := e.factIDs(t, other, theirs.DocumentVersionID)
	require.Len(t, theirIDs, 1)

	sn := e.createSnapshot(t, store.DevTenantID)
	_, err := e.addItems(t, store.DevTenantID, sn.SnapshotID, append(append([]uuid.UUID{}, myIDs...), uuid.New()))
	requireCode(t, err, errcode.NotFound)
	_, err = e.addItems(t, store.DevTenantID, sn.SnapshotID, theirIDs)
	nf := requireCode(t, err, errcode.NotFound)
	require.Contains(t, nf.Message, theirIDs[0].String())
	got, err := e.Store.GetSnapshot(e.Ctx, store.DevTenantID, sn.SnapshotID)
	require.NoError(t, err)
	require.Zero(t, got.ItemCount)

	// The other tenant cannot see or change the snapshot.
	_, err = e.Store.GetSnapshot(e.Ctx, other, sn.SnapshotID)
	requireCode(t, err, errcode.NotFound)
	_, err = e.addItems(t, other, sn.SnapshotID, theirIDs)
	requireCode(t, err, errcode.NotFound)
	_, err = e.markReady(t, other, sn.SnapshotID)
	requireCode(t, err, errcode.NotFound)
	_, err = e.seal(t, other, sn.SnapshotID)
	requireCode(t, err, errcode.NotFound)

	n, err := e.addItems(t, store.DevTenantID, sn.SnapshotID, myIDs)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	items, err := e.Store.ListSnapshotItems(e.Ctx, other, sn.SnapshotID)
	require.NoError(t, err)
	require.Empty(t, items)
	fs, err := e.Store.SnapshotFacts(e.Ctx, other, sn.SnapshotID)
	require.NoError(t, err)
	require.Empty(t, fs)

	_, err = e.Store.CreateSnapshot(e.Ctx, uuid.New())
	requireCode(t, err, errcode.NotFound)
	_, err = e.Store.GetSnapshot(e.Ctx, store.DevTenantID, uuid.New())
	requireCode(t, err, errcode.NotFound)
}

func TestEmptySnapshotCanBeSealed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sn := e.createSnapshot(t, store.DevTenantID)
	ready, err := e.markReady(t, store.DevTenantID, sn.SnapshotID)
	require.NoError(t, err)
	require.Equal(t, bpctype.SnapshotReady, ready.Status)
	sealed, err := e.seal(t, store.DevTenantID, sn.SnapshotID)
	require.NoError(t, err)
	require.Equal(t, bpctype.SnapshotSealed, sealed.Status)
	require.Equal(t, sealOf(t, sn.SnapshotID, nil), *sealed.SnapshotHash)
	fs, err := e.Store.SnapshotFacts(e.Ctx, store.DevTenantID, sn.SnapshotID)
	require.NoError(t, err)
	require.Empty(t, fs)
}

func TestSnapshotFactsAreCanonical(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sn, all := e.sealedSample(t, store.DevTenantID)
	require.Equal(t, sealOf(t, sn.SnapshotID, all), *sn.SnapshotHash)

	got, err := e.Store.SnapshotFacts(e.Ctx, store.DevTenantID, sn.SnapshotID)
	require.NoError(t, err)
	require.Len(t, got, len(all))
	want := map[string][]byte{}
	for _, f := range all {
		want[f.FactType+"|"+f.FactKey] = f.Payload
	}
	for _, f := range got {
		require.Equal(t, want[f.FactType+"|"+f.FactKey], f.Payload, "%s %s", f.FactType, f.FactKey)
	}

	// The parsed sample documents are exactly the sample's facts.json.
	sample, err := nmc811.Facts()
	require.NoError(t, err)
	require.ElementsMatch(t, sample, got)
}

// The status writes are guarded: one whose snapshot is not in the state the
// caller decided on changes nothing.
func TestSnapshotStatusWritesAreGuarded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sn := e.createSnapshot(t, store.DevTenantID)
	digest := strings.Repeat("ab", 32)
	_, err := e.Store.SetSnapshotSealed(e.Ctx, store.DevTenantID, sn.SnapshotID, digest)
	require.ErrorIs(t, err, store.ErrStale, "a BUILDING snapshot is not sealed")
	ready, err := e.Store.SetSnapshotReady(e.Ctx, store.DevTenantID, sn.SnapshotID)
	require.NoError(t, err)
	require.Equal(t, bpctype.SnapshotReady, ready.Status)
	_, err = e.Store.SetSnapshotReady(e.Ctx, store.DevTenantID, sn.SnapshotID)
	require.ErrorIs(t, err, store.ErrStale, "a READY snapshot is not made READY again")
	sealed, err := e.Store.SetSnapshotSealed(e.Ctx, store.DevTenantID, sn.SnapshotID, digest)
	require.NoError(t, err)
	require.Equal(t, bpctype.SnapshotSealed, sealed.Status)
	require.Equal(t, digest, *sealed.SnapshotHash)
}

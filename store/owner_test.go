package store_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/facts"
	"github.com/bpc-platform/bpc/store"
)

// TenantOfID finds the owner of any globally unique id, in whichever
// table it is, and says when nobody owns it.
func TestTenantOfID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other, err := e.Store.CreateTenant(e.Ctx, "owner-"+uuid.NewString()[:8], "Other")
	require.NoError(t, err)

	doc := e.createDocument(t, other.TenantID, facts.KindBOM, "bom")
	product, err := e.Store.CreateBatteryProduct(e.Ctx, other.TenantID, "SKU-1", "Cell")
	require.NoError(t, err)
	snapshot, err := e.Store.CreateSnapshot(e.Ctx, store.DevTenantID)
	require.NoError(t, err)
	endpoint := e.endpoint(t) // the dev tenant's

	for id, want := range map[uuid.UUID]uuid.UUID{
		doc.DocumentID:             other.TenantID,
		product.BatteryProductID:   other.TenantID,
		snapshot.SnapshotID:        store.DevTenantID,
		endpoint.WebhookEndpointID: store.DevTenantID,
	} {
		got, found, err := e.Store.TenantOfID(e.Ctx, id)
		require.NoError(t, err)
		require.True(t, found, id)
		require.Equal(t, want, got, id)
	}

	_, found, err := e.Store.TenantOfID(e.Ctx, uuid.New())
	require.NoError(t, err)
	require.False(t, found)
	// A tenant's own id is not a resource of it.
	_, found, err = e.Store.TenantOfID(e.Ctx, other.TenantID)
	require.NoError(t, err)
	require.False(t, found)
}

package passport_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// A prod service on a fresh database has no tenant at all: the dev tenant
// the first migration seeds is removed, and stays removed at every start;
// a test or dev service has it (seeded again if it went missing).
func TestNoDevTenantInProd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tenants, err := e.Store.ListTenants(e.Ctx)
	require.NoError(t, err)
	require.Len(t, tenants, 1, "a fresh database: the migration seeded the dev tenant")

	for range 2 { // and again at the next start
		state, err := passport.SettleDevTenant(e.Ctx, e.Store, "prod")
		require.NoError(t, err)
		require.Equal(t, passport.DevTenantAbsent, state)
		tenants, err = e.Store.ListTenants(e.Ctx)
		require.NoError(t, err)
		require.Empty(t, tenants, "no tenant seeded in prod")
		_, err = e.Store.GetTenant(e.Ctx, store.DevTenantID)
		require.Equal(t, errcode.NotFound, errcode.CodeOf(err))
	}
	require.NoError(t, e.Store.RequireTenant(e.Ctx, store.SystemTenantID), "the internal system tenant stays")

	for _, env := range []string{"test", "dev"} {
		state, err := passport.SettleDevTenant(e.Ctx, e.Store, env)
		require.NoError(t, err)
		require.Equal(t, passport.DevTenantSeeded, state)
		got, err := e.Store.GetTenant(e.Ctx, store.DevTenantID)
		require.NoError(t, err, env)
		require.Equal(t, "dev", got.Slug)
	}
}

// A dev tenant that holds data in prod (a database that was served in dev
// first) is kept with its data, and reported; other tenants are untouched.
func TestDevTenantWithDataIsKeptInProd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other, err := e.Store.CreateTenant(e.Ctx, "acme-"+uuid.NewString()[:8], "Acme")
	require.NoError(t, err)
	doc := e.bomDocument(t, "bom.csv")

	state, err := passport.SettleDevTenant(e.Ctx, e.Store, "prod")
	require.NoError(t, err)
	require.Equal(t, passport.DevTenantInUse, state)
	require.NoError(t, e.Store.RequireTenant(e.Ctx, store.DevTenantID))
	_, err = e.Store.GetDocument(e.Ctx, store.DevTenantID, doc.DocumentID)
	require.NoError(t, err, "its data is kept")
	require.NoError(t, e.Store.RequireTenant(e.Ctx, other.TenantID))
}

// A dev tenant whose only rows are jobs — live, then only in the history
// once River has deleted them — is kept in prod too: the jobs tables have
// no foreign key to tenants, so the check is the only thing keeping them.
func TestDevTenantWithOnlyJobsIsKeptInProd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var riverID int64
	require.NoError(t, e.Pool.QueryRow(e.Ctx, `INSERT INTO river_job (args, kind, queue)
		VALUES (jsonb_build_object('tenant_id', $1::text), 'NOOP', 'default') RETURNING id`,
		store.DevTenantID.String()).Scan(&riverID))
	require.Equal(t, 1, e.Count(t, `SELECT count(*) FROM jobs_live WHERE tenant_id = $1`, store.DevTenantID))

	state, err := passport.SettleDevTenant(e.Ctx, e.Store, "prod")
	require.NoError(t, err)
	require.Equal(t, passport.DevTenantInUse, state, "a live job")

	e.Exec(t, `DELETE FROM river_job WHERE id = $1`, riverID)
	require.Equal(t, 1, e.Count(t, `SELECT count(*) FROM jobs_history WHERE tenant_id = $1`, store.DevTenantID))
	state, err = passport.SettleDevTenant(e.Ctx, e.Store, "prod")
	require.NoError(t, err)
	require.Equal(t, passport.DevTenantInUse, state, "a job in the history")

	e.Exec(t, `DELETE FROM jobs_history WHERE tenant_id = $1`, store.DevTenantID)
	state, err = passport.SettleDevTenant(e.Ctx, e.Store, "prod")
	require.NoError(t, err)
	require.Equal(t, passport.DevTenantAbsent, state, "no job left")
}

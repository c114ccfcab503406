package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
)

// SystemTenantID owns jobs that name no tenant.
var SystemTenantID = uuid.Nil

// DevTenantID is the seeded `dev` tenant.
var DevTenantID = uuid.MustParse("00000000-0000-0000-0000-00000000de00")

// CreateTenant inserts a tenant; a taken slug is a 409-style INVALID_STATE.
func (q *Queries) CreateTenant(ctx context.Context, slug, name string) (bpctype.Tenant, error) {
	t, err := queryOne[bpctype.Tenant](ctx, q.db, `INSERT INTO tenants (tenant_id, slug, name) VALUES ($1, $2, $3)
		RETURNING tenant_id, slug, name, created_at`, uuid.New(), slug, name)
	if IsUniqueViolation(err, "tenants_slug_key") {
		return bpctype.Tenant{}, errcode.New(errcode.InvalidState, "tenant slug %q is taken", slug)
	}
	if err != nil {
		return bpctype.Tenant{}, fmt.Errorf("error creating tenant %s: %w", slug, err)
	}
	return t, nil
}

// ListTenants returns every tenant but the internal system tenant, by slug.
func (q *Queries) ListTenants(ctx context.Context) ([]bpctype.Tenant, error) {
	return list[bpctype.Tenant](ctx, q.db, "tenants",
		`SELECT tenant_id, slug, name, created_at FROM tenants
		WHERE tenant_id <> $1 ORDER BY slug`, SystemTenantID)
}

// GetTenant returns a tenant.
func (q *Queries) GetTenant(ctx context.Context, tenantID uuid.UUID) (bpctype.Tenant, error) {
	return getOne[bpctype.Tenant](ctx, q.db, "tenant", tenantID,
		`SELECT tenant_id, slug, name, created_at FROM tenants WHERE tenant_id = $1`, tenantID)
}

// RequireTenant returns NOT_FOUND unless the tenant exists.
func (q *Queries) RequireTenant(ctx context.Context, tenantID uuid.UUID) error {
	var one int
	err := q.db.QueryRow(ctx, `SELECT 1 FROM tenants WHERE tenant_id = $1`, tenantID).Scan(&one)
	if err != nil {
		return notFound(err, "tenant", tenantID)
	}
	return nil
}

// SeedDevTenant inserts the `dev` tenant (DevTenantID) unless it exists.
func (q *Queries) SeedDevTenant(ctx context.Context) error {
	if _, err := q.db.Exec(ctx, `INSERT INTO tenants (tenant_id, slug, name) VALUES ($1, 'dev', 'Development tenant')
		ON CONFLICT DO NOTHING`, DevTenantID); err != nil {
		return fmt.Errorf("error seeding the dev tenant: %w", err)
	}
	return nil
}

// DeleteDevTenantIfUnused deletes the `dev` tenant when nothing is its:
// no job, and no row that references it (the foreign keys refuse the
// delete otherwise). It reports whether the tenant is gone and whether it
// was kept because something is its.
func (q *Queries) DeleteDevTenantIfUnused(ctx context.Context) (deleted, inUse bool, err error) {
	var n int64
	err = q.InTx(ctx, func(tx pgx.Tx) error {
		// A savepoint of its own when called inside a transaction: a
		// foreign key refusal must not abort the caller's.
		// The tables, not the view jobs: through the view's join of the
		// live halves the probe became a hash join over every live state.
		tag, err := tx.Exec(ctx, `DELETE FROM tenants WHERE tenant_id = $1
			AND NOT EXISTS (SELECT 1 FROM jobs_live_fixed WHERE tenant_id = $1)
			AND NOT EXISTS (SELECT 1 FROM jobs_history WHERE tenant_id = $1)`, DevTenantID)
		n = tag.RowsAffected()
		return err
	})
	if IsForeignKeyViolation(err) {
		return false, true, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("error deleting the dev tenant: %w", err)
	}
	if n == 1 {
		return true, false, nil
	}
	var exists bool
	if err := q.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tenants WHERE tenant_id = $1)`, DevTenantID).Scan(&exists); err != nil {
		return false, false, fmt.Errorf("error reading the dev tenant: %w", err)
	}
	return !exists, exists, nil
}

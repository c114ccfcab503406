package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"

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

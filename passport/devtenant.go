package passport

import (
	"context"

	"github.com/bpc-platform/bpc/store"
)

// DevTenantState is what SettleDevTenant found and did.
type DevTenantState string

// The outcomes of SettleDevTenant.
const (
	// DevTenantSeeded: outside prod, the dev tenant exists (seeded now or
	// before).
	DevTenantSeeded DevTenantState = "seeded"
	// DevTenantAbsent: in prod, there is no dev tenant (removed now or
	// before).
	DevTenantAbsent DevTenantState = "absent"
	// DevTenantInUse: in prod, the dev tenant holds rows or jobs, so it is
	// kept; an operator decides what becomes of them.
	DevTenantInUse DevTenantState = "in_use"
)

// SettleDevTenant makes the `dev` tenant (store.DevTenantID) exist only
// outside prod. The first migration seeds it so that a fresh local database
// is usable at once, and migrations know no environment: so a prod
// service removes it at start, when nothing is its yet. A tenant nobody
// created, with a well-known id and slug, has no place among the real ones
// (the platform could mint it keys by mistake, a listing shows it). A dev
// tenant that already holds data in prod is kept and reported, never
// deleted with its data. Every other environment seeds it again if it is
// missing (a database first served in prod, then copied to test).
func SettleDevTenant(ctx context.Context, q *store.Queries, env string) (DevTenantState, error) {
	if env != "prod" {
		if err := q.SeedDevTenant(ctx); err != nil {
			return "", err
		}
		return DevTenantSeeded, nil
	}
	_, inUse, err := q.DeleteDevTenantIfUnused(ctx)
	switch {
	case err != nil:
		return "", err
	case inUse:
		return DevTenantInUse, nil
	}
	return DevTenantAbsent, nil
}

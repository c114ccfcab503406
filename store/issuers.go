package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
)

// issuerProfileColumns are bpctype.IssuerProfile's columns.
const issuerProfileColumns = `tenant_id, legal_name, country, registration_id, website, identity_verified_at, updated_at`

// GetIssuerProfile returns the tenant's issuer profile; a tenant without
// one (or no such tenant) is NOT_FOUND.
func (q *Queries) GetIssuerProfile(ctx context.Context, tenantID uuid.UUID) (bpctype.IssuerProfile, error) {
	return getOne[bpctype.IssuerProfile](ctx, q.db, "issuer profile of tenant", tenantID,
		`SELECT `+issuerProfileColumns+` FROM issuer_profiles WHERE tenant_id = $1`, tenantID)
}

// LockIssuerProfile is GetIssuerProfile that locks the row until the
// transaction ends, so that a change and a verification of the same
// profile are serialised.
func (q *Queries) LockIssuerProfile(ctx context.Context, tenantID uuid.UUID) (bpctype.IssuerProfile, error) {
	return getOne[bpctype.IssuerProfile](ctx, q.db, "issuer profile of tenant", tenantID,
		`SELECT `+issuerProfileColumns+` FROM issuer_profiles WHERE tenant_id = $1 FOR UPDATE`, tenantID)
}

// PutIssuerProfile inserts or replaces the tenant's profile with p's
// legal name, country, registration id, website and identity verification
// time; updated_at becomes now. The caller decides what
// identity_verified_at becomes.
func (q *Queries) PutIssuerProfile(ctx context.Context, p bpctype.IssuerProfile) (bpctype.IssuerProfile, error) {
	out, err := queryOne[bpctype.IssuerProfile](ctx, q.db, `INSERT INTO issuer_profiles
			(tenant_id, legal_name, country, registration_id, website, identity_verified_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (tenant_id) DO UPDATE SET legal_name = EXCLUDED.legal_name, country = EXCLUDED.country,
			registration_id = EXCLUDED.registration_id, website = EXCLUDED.website,
			identity_verified_at = EXCLUDED.identity_verified_at, updated_at = now()
		RETURNING `+issuerProfileColumns,
		p.TenantID, p.LegalName, p.Country, p.RegistrationID, p.Website, p.IdentityVerifiedAt)
	if err != nil {
		return bpctype.IssuerProfile{}, fmt.Errorf("error storing the issuer profile of tenant %s: %w", p.TenantID, err)
	}
	return out, nil
}

// SetIssuerVerified records that the platform verified the tenant's
// identity at at; a tenant without a profile is NOT_FOUND.
func (q *Queries) SetIssuerVerified(ctx context.Context, tenantID uuid.UUID, at time.Time) (bpctype.IssuerProfile, error) {
	return getOne[bpctype.IssuerProfile](ctx, q.db, "issuer profile of tenant", tenantID,
		`UPDATE issuer_profiles SET identity_verified_at = $2 WHERE tenant_id = $1 RETURNING `+issuerProfileColumns,
		tenantID, at)
}

// IssuerDirectory is what the public key directory shows of a tenant: its
// issuer profile (nil without one) and its own signing keys, oldest first.
// The platform's legacy key (no tenant) is in no tenant's directory.
type IssuerDirectory struct {
	TenantID uuid.UUID
	Profile  *bpctype.IssuerProfile
	Keys     []bpctype.SigningKey
}

// GetIssuerDirectory returns the tenant's profile and keys. The system
// tenant, an unknown tenant and a tenant with neither profile nor keys are
// NOT_FOUND: the directory lists issuers, not every tenant. Read through a
// ReadRouter, a directory the replica does not have yet (a tenant's first
// key, just made) is looked up again on the primary.
func (q *Queries) GetIssuerDirectory(ctx context.Context, tenantID uuid.UUID) (IssuerDirectory, error) {
	if tenantID == SystemTenantID {
		return IssuerDirectory{TenantID: tenantID}, notFoundIssuer(tenantID)
	}
	return primaryIfNotReplayed(ctx, q, func(ctx context.Context) (IssuerDirectory, error) {
		return q.getIssuerDirectory(ctx, tenantID)
	})
}

func (q *Queries) getIssuerDirectory(ctx context.Context, tenantID uuid.UUID) (IssuerDirectory, error) {
	d := IssuerDirectory{TenantID: tenantID}
	if tenantID == SystemTenantID {
		return d, notFoundIssuer(tenantID)
	}
	p, err := q.GetIssuerProfile(ctx, tenantID)
	switch {
	case err == nil:
		d.Profile = &p
	case !errors.Is(err, ErrNotFound):
		return d, err
	}
	d.Keys, err = list[bpctype.SigningKey](ctx, q.db, "signing keys",
		`SELECT `+signingKeyColumns+` FROM signing_keys WHERE tenant_id = $1 ORDER BY created_at, key_id`, tenantID)
	if err != nil {
		return d, err
	}
	if d.Profile == nil && len(d.Keys) == 0 {
		return d, notFoundIssuer(tenantID)
	}
	return d, nil
}

func notFoundIssuer(tenantID uuid.UUID) error {
	return errcode.Wrap(errcode.NotFound, ErrNotFound, "issuer %s not found", tenantID)
}

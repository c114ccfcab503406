package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
)

// PublicPassportVersion is what public verification reads of a passport
// version: the version with its stored bytes, its product, and the public
// key the service registered under the version's signing key id (nil when
// none is registered, which fails verification).
type PublicPassportVersion struct {
	bpctype.PassportVersion
	BatteryProductID uuid.UUID `db:"battery_product_id"`
	ProductSKU       string    `db:"product_sku"`
	ProductName      string    `db:"product_name"`
	Payload          []byte    `db:"payload"`
	Proof            []byte    `db:"proof"`
	// ReceiptSigned is the canonical receipt with its signature.
	ReceiptSigned []byte `db:"receipt_signed"`
	QRPNG         []byte `db:"qr_png"`
	// RegisteredPublicKey is signing_keys' public key (standard base64) for
	// the version's signing_key_id: the key the service vouches for, not the
	// copy stored on the version.
	RegisteredPublicKey *string `db:"registered_public_key"`
	// KeyTenantID is the tenant the registered key belongs to; nil for the
	// platform's legacy key (or no registered key).
	KeyTenantID *uuid.UUID `db:"key_tenant_id"`
	// KeyStatus is the registered key's status (bpctype.KeyActive, …);
	// nil when no key is registered.
	KeyStatus           *string    `db:"key_status"`
	KeyRevokedAt        *time.Time `db:"key_revoked_at"`
	KeyCompromisedAt    *time.Time `db:"key_compromised_at"`
	KeyRevocationReason *string    `db:"key_revocation_reason"`
	// TenantName is the name of the version's tenant.
	TenantName string `db:"tenant_name"`
	// Issuer is the version's tenant's issuer profile, nil without one.
	Issuer *bpctype.IssuerProfile `db:"-"`
	// The issuer profile's columns, read into Issuer by the store.
	IssuerLegalName          *string    `db:"issuer_legal_name"`
	IssuerCountry            *string    `db:"issuer_country"`
	IssuerRegistrationID     *string    `db:"issuer_registration_id"`
	IssuerWebsite            *string    `db:"issuer_website"`
	IssuerIdentityVerifiedAt *time.Time `db:"issuer_identity_verified_at"`
	IssuerUpdatedAt          *time.Time `db:"issuer_updated_at"`
}

// GetPublicPassportVersion returns a version that anyone may see: ACTIVE or
// SUPERSEDED ones only; any other, or an unknown id, is NOT_FOUND. It is the
// one lookup of a passport version that is not scoped to a tenant: a QR
// code names the version alone, and what it shows is public by design.
//
// Read through a ReadRouter, a version the replica has not replayed yet is
// looked up again on the primary.
func (q *Queries) GetPublicPassportVersion(ctx context.Context, id uuid.UUID) (PublicPassportVersion, error) {
	return primaryIfNotReplayed(ctx, q, func(ctx context.Context) (PublicPassportVersion, error) {
		return q.getPublicPassportVersion(ctx, id)
	})
}

func (q *Queries) getPublicPassportVersion(ctx context.Context, id uuid.UUID) (PublicPassportVersion, error) {
	v, err := getOne[PublicPassportVersion](ctx, q.db, "passport version", id,
		`WITH v AS (
			SELECT `+passportVersionColumns+`, payload, proof, receipt_signed, qr_png
			FROM passport_versions
			WHERE passport_version_id = $1 AND status IN ('`+bpctype.PassportActive+`', '`+bpctype.PassportSuperseded+`')
		)
		SELECT v.*, bp.battery_product_id, bp.sku AS product_sku, bp.name AS product_name,
			k.public_key_base64 AS registered_public_key, k.tenant_id AS key_tenant_id, k.status AS key_status,
			k.revoked_at AS key_revoked_at, k.compromised_at AS key_compromised_at,
			k.revocation_reason AS key_revocation_reason, t.name AS tenant_name,
			ip.legal_name AS issuer_legal_name, ip.country AS issuer_country,
			ip.registration_id AS issuer_registration_id, ip.website AS issuer_website,
			ip.identity_verified_at AS issuer_identity_verified_at, ip.updated_at AS issuer_updated_at
		FROM v
		JOIN tenants t ON t.tenant_id = v.tenant_id
		JOIN passports p ON p.tenant_id = v.tenant_id AND p.passport_id = v.passport_id
		JOIN battery_products bp ON bp.tenant_id = p.tenant_id AND bp.battery_product_id = p.battery_product_id
		LEFT JOIN signing_keys k ON k.key_id = v.signing_key_id
		LEFT JOIN issuer_profiles ip ON ip.tenant_id = v.tenant_id`, id)
	if err != nil {
		return v, err
	}
	if v.IssuerLegalName != nil {
		v.Issuer = &bpctype.IssuerProfile{
			TenantID: v.TenantID, LegalName: *v.IssuerLegalName, Country: deref(v.IssuerCountry),
			RegistrationID: deref(v.IssuerRegistrationID), Website: v.IssuerWebsite,
			IdentityVerifiedAt: v.IssuerIdentityVerifiedAt,
		}
		if v.IssuerUpdatedAt != nil {
			v.Issuer.UpdatedAt = *v.IssuerUpdatedAt
		}
	}
	return v, nil
}

package bpctype

import (
	"time"

	"github.com/google/uuid"
)

// The statuses of a signing key (SPEC §16).
const (
	// KeyActive signs the tenant's new passports; a tenant has at most one.
	KeyActive = "active"
	// KeyRetired was replaced by a rotation; what it signed still verifies.
	KeyRetired = "retired"
	// KeyRevoked was compromised: what it signed at or after CompromisedAt
	// no longer verifies.
	KeyRevoked = "revoked"
)

// SigningKey is a public key that signs (or signed) passport receipts. A key
// without a TenantID is the platform's legacy key, which signed every
// tenant's receipts before tenants had keys of their own.
type SigningKey struct {
	KeyID            string     `db:"key_id" json:"key_id"`
	TenantID         *uuid.UUID `db:"tenant_id" json:"tenant_id"`
	Alg              string     `db:"alg" json:"alg"`
	PublicKeyBase64  string     `db:"public_key_base64" json:"public_key_base64"`
	Status           string     `db:"status" json:"status"`
	CreatedAt        time.Time  `db:"created_at" json:"created_at"`
	RetiredAt        *time.Time `db:"retired_at" json:"retired_at"`
	RevokedAt        *time.Time `db:"revoked_at" json:"revoked_at"`
	CompromisedAt    *time.Time `db:"compromised_at" json:"compromised_at"`
	RevocationReason *string    `db:"revocation_reason" json:"revocation_reason"`
}

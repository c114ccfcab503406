package bpctype

import (
	"time"

	"github.com/google/uuid"
)

// APIKey is a tenant's credential with a role. TokenSHA256 is the hash of
// the token shown once at creation; the token itself is never stored.
type APIKey struct {
	APIKeyID    uuid.UUID  `db:"api_key_id" json:"api_key_id"`
	TenantID    uuid.UUID  `db:"tenant_id" json:"tenant_id"`
	Name        string     `db:"name" json:"name"`
	Role        string     `db:"role" json:"role"`
	Prefix      string     `db:"prefix" json:"prefix"`
	TokenSHA256 []byte     `db:"token_sha256" json:"-"`
	CreatedAt   time.Time  `db:"created_at" json:"created_at"`
	ExpiresAt   *time.Time `db:"expires_at" json:"expires_at"`
	RevokedAt   *time.Time `db:"revoked_at" json:"revoked_at"`
	LastUsedAt  *time.Time `db:"last_used_at" json:"last_used_at"`
}

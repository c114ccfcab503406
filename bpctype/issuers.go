package bpctype

import (
	"time"

	"github.com/google/uuid"
)

// IssuerProfile is who a tenant is, as its passports name it (SPEC §16).
// IdentityVerifiedAt is set only by the platform, after it checked the
// company; any change of the profile clears it.
type IssuerProfile struct {
	TenantID           uuid.UUID  `db:"tenant_id" json:"tenant_id"`
	LegalName          string     `db:"legal_name" json:"legal_name"`
	Country            string     `db:"country" json:"country"`
	RegistrationID     string     `db:"registration_id" json:"registration_id"`
	Website            *string    `db:"website" json:"website"`
	IdentityVerifiedAt *time.Time `db:"identity_verified_at" json:"identity_verified_at"`
	UpdatedAt          time.Time  `db:"updated_at" json:"updated_at"`
}

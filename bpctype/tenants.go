package bpctype

import (
	"time"

	"github.com/google/uuid"
)

// Tenant is an organisation whose data is kept apart from every other's.
type Tenant struct {
	TenantID  uuid.UUID `db:"tenant_id" json:"tenant_id"`
	Slug      string    `db:"slug" json:"slug"`
	Name      string    `db:"name" json:"name"`
	CreatedAt time.Time `db:"created_at" json:"created_at"`
}

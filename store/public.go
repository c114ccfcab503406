package store

import (
	"context"

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
}

// GetPublicPassportVersion returns a version that anyone may see: ACTIVE or
// SUPERSEDED ones only; any other, or an unknown id, is NOT_FOUND. It is the
// one lookup of a passport version that is not scoped to a tenant: a QR
// code names the version alone, and what it shows is public by design.
func (q *Queries) GetPublicPassportVersion(ctx context.Context, id uuid.UUID) (PublicPassportVersion, error) {
	return getOne[PublicPassportVersion](ctx, q.db, "passport version", id,
		`WITH v AS (
			SELECT `+passportVersionColumns+`, payload, proof, receipt_signed, qr_png
			FROM passport_versions
			WHERE passport_version_id = $1 AND status IN ('`+bpctype.PassportActive+`', '`+bpctype.PassportSuperseded+`')
		)
		SELECT v.*, bp.battery_product_id, bp.sku AS product_sku, bp.name AS product_name,
			k.public_key_base64 AS registered_public_key
		FROM v
		JOIN passports p ON p.tenant_id = v.tenant_id AND p.passport_id = v.passport_id
		JOIN battery_products bp ON bp.tenant_id = p.tenant_id AND bp.battery_product_id = p.battery_product_id
		LEFT JOIN signing_keys k ON k.key_id = v.signing_key_id`, id)
}

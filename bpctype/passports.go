package bpctype

import (
	"time"

	"github.com/google/uuid"
)

// Passport version statuses.
const (
	PassportCompiling  = "COMPILING"
	PassportSigned     = "SIGNED"
	PassportActive     = "ACTIVE"
	PassportSuperseded = "SUPERSEDED"
)

// PassportStatuses lists every passport version status, in order.
var PassportStatuses = []string{PassportCompiling, PassportSigned, PassportActive, PassportSuperseded}

// PublishedPassportStatuses are the statuses of the versions public
// verification shows.
var PublishedPassportStatuses = []string{PassportActive, PassportSuperseded}

// BatteryProduct is a battery model; SKUs are unique per tenant.
type BatteryProduct struct {
	BatteryProductID uuid.UUID `db:"battery_product_id" json:"battery_product_id"`
	TenantID         uuid.UUID `db:"tenant_id" json:"tenant_id"`
	SKU              string    `db:"sku" json:"sku"`
	Name             string    `db:"name" json:"name"`
	CreatedAt        time.Time `db:"created_at" json:"created_at"`
}

// Passport is a battery product's passport; its versions are compiled,
// signed and activated one after the other.
type Passport struct {
	PassportID       uuid.UUID  `db:"passport_id" json:"passport_id"`
	TenantID         uuid.UUID  `db:"tenant_id" json:"tenant_id"`
	BatteryProductID uuid.UUID  `db:"battery_product_id" json:"battery_product_id"`
	ActiveVersionID  *uuid.UUID `db:"active_version_id" json:"active_version_id"`
	CreatedAt        time.Time  `db:"created_at" json:"created_at"`
	UpdatedAt        time.Time  `db:"updated_at" json:"updated_at"`
}

// PassportVersion is a compiled passport version. The artifacts (payload,
// proof, receipts, QR PNG) are loaded only by the store's
// LoadPassportArtifacts; their hashes are always here.
type PassportVersion struct {
	PassportVersionID    uuid.UUID  `db:"passport_version_id" json:"passport_version_id"`
	TenantID             uuid.UUID  `db:"tenant_id" json:"tenant_id"`
	PassportID           uuid.UUID  `db:"passport_id" json:"passport_id"`
	Version              int32      `db:"version" json:"version"`
	Status               string     `db:"status" json:"status"`
	SnapshotID           uuid.UUID  `db:"snapshot_id" json:"snapshot_id"`
	RulePackageVersionID uuid.UUID  `db:"rule_package_version_id" json:"rule_package_version_id"`
	CompilerBuildID      string     `db:"compiler_build_id" json:"compiler_build_id"`
	IssuedAt             time.Time  `db:"issued_at" json:"issued_at"`
	PayloadHash          string     `db:"payload_hash" json:"payload_hash"`
	PayloadBytes         int32      `db:"payload_bytes" json:"payload_bytes"`
	ProofRootHash        string     `db:"proof_root_hash" json:"proof_root_hash"`
	ProofBytes           int32      `db:"proof_bytes" json:"proof_bytes"`
	ReceiptHash          string     `db:"receipt_hash" json:"receipt_hash"`
	Signature            *string    `db:"signature" json:"signature"`
	SigningKeyID         string     `db:"signing_key_id" json:"signing_key_id"`
	SigningPublicKey     *string    `db:"signing_public_key" json:"signing_public_key"`
	QRPayload            *string    `db:"qr_payload" json:"qr_payload"`
	CompileRiverJobID    *int64     `db:"compile_river_job_id" json:"compile_river_job_id"`
	CreatedAt            time.Time  `db:"created_at" json:"created_at"`
	SignedAt             *time.Time `db:"signed_at" json:"signed_at"`
	QRGeneratedAt        *time.Time `db:"qr_generated_at" json:"qr_generated_at"`
	ActivatedAt          *time.Time `db:"activated_at" json:"activated_at"`
	SupersededAt         *time.Time `db:"superseded_at" json:"superseded_at"`
}

// PassportArtifacts are a version's stored bytes.
type PassportArtifacts struct {
	Payload []byte `db:"payload"`
	Proof   []byte `db:"proof"`
	// Receipt is the unsigned canonical receipt (what receipt_hash is over);
	// ReceiptSigned the canonical receipt with its signature, once signed.
	Receipt       []byte `db:"receipt"`
	ReceiptSigned []byte `db:"receipt_signed"`
	QRPNG         []byte `db:"qr_png"`
}

// PassportExport is an export file written for a version.
type PassportExport struct {
	PassportExportID  uuid.UUID `db:"passport_export_id" json:"passport_export_id"`
	TenantID          uuid.UUID `db:"tenant_id" json:"tenant_id"`
	PassportVersionID uuid.UUID `db:"passport_version_id" json:"passport_version_id"`
	Format            string    `db:"format" json:"format"`
	Path              string    `db:"path" json:"path"`
	SizeBytes         int64     `db:"size_bytes" json:"size_bytes"`
	SHA256            string    `db:"sha256" json:"sha256"`
	RiverJobID        *int64    `db:"river_job_id" json:"river_job_id"`
	CreatedAt         time.Time `db:"created_at" json:"created_at"`
}

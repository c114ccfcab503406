package bpctype

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Document version statuses.
const (
	DocUploaded  = "UPLOADED"
	DocValidated = "VALIDATED"
	DocRejected  = "REJECTED"
)

// DocumentVersionStatuses lists every document version status.
var DocumentVersionStatuses = []string{DocUploaded, DocValidated, DocRejected}

// Document is a named source document of one kind (BOM, PCF, DUE_DILIGENCE).
type Document struct {
	DocumentID uuid.UUID `db:"document_id" json:"document_id"`
	TenantID   uuid.UUID `db:"tenant_id" json:"tenant_id"`
	Kind       string    `db:"kind" json:"kind"`
	Name       string    `db:"name" json:"name"`
	CreatedAt  time.Time `db:"created_at" json:"created_at"`
}

// DocumentVersion is one uploaded content of a document. Content is only
// loaded by the store's LoadDocumentVersionContent.
type DocumentVersion struct {
	DocumentVersionID uuid.UUID       `db:"document_version_id" json:"document_version_id"`
	TenantID          uuid.UUID       `db:"tenant_id" json:"tenant_id"`
	DocumentID        uuid.UUID       `db:"document_id" json:"document_id"`
	Version           int32           `db:"version" json:"version"`
	MimeType          string          `db:"mime_type" json:"mime_type"`
	ContentSHA256     string          `db:"content_sha256" json:"content_sha256"`
	SizeBytes         int32           `db:"size_bytes" json:"size_bytes"`
	Status            string          `db:"status" json:"status"`
	Error             json.RawMessage `db:"error" json:"error"`
	FactCount         *int32          `db:"fact_count" json:"fact_count"`
	CreatedAt         time.Time       `db:"created_at" json:"created_at"`
	ProcessedAt       *time.Time      `db:"processed_at" json:"processed_at"`
}

// Fact is a stored fact. Payload is the canonical JSON (BPC-CJSON-1).
type Fact struct {
	FactID                  uuid.UUID       `db:"fact_id" json:"fact_id"`
	TenantID                uuid.UUID       `db:"tenant_id" json:"tenant_id"`
	FactType                string          `db:"fact_type" json:"fact_type"`
	FactKey                 string          `db:"fact_key" json:"fact_key"`
	SchemaVersion           int32           `db:"schema_version" json:"schema_version"`
	Payload                 json.RawMessage `db:"payload_canonical" json:"payload"`
	PayloadHash             string          `db:"payload_hash" json:"payload_hash"`
	SourceDocumentVersionID uuid.UUID       `db:"source_document_version_id" json:"source_document_version_id"`
	CreatedAt               time.Time       `db:"created_at" json:"created_at"`
}
